package imagetest

import (
	"testing"
)

func TestCacheDir(t *testing.T) {
	t.Setenv(CacheEnv, "")
	if got := CacheDir(); got != DefaultCacheDir {
		t.Errorf("CacheDir() = %q with %s unset, want %q", got, CacheEnv, DefaultCacheDir)
	}
	t.Setenv(CacheEnv, "/srv/cache")
	if got := CacheDir(); got != "/srv/cache" {
		t.Errorf("CacheDir() = %q, want the %s value", got, CacheEnv)
	}
}
