package image

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// GuestModules returns the kernel modules the guest needs before it can mount its root and
// talk to the host: virtio over MMIO (QEMU's microvm machine has no PCI), the block, net
// and console drivers, and ext4. crc32c_generic is listed by hand because ext4 and jbd2
// ask the crypto API for "crc32c" at mount time, which modprobe would satisfy through a
// softdep; the initramfs has no modprobe. Their dependencies are resolved from modules.dep.
func GuestModules() []string {
	return []string{"virtio_mmio", "virtio_blk", "virtio_net", "virtio_console", "crc32c_generic", "ext4"}
}

// moduleDeps is a parsed modules.dep: module name → its path (relative to
// /lib/modules/<version>) and the names of the modules it needs.
type moduleDeps struct {
	path map[string]string
	deps map[string][]string
}

// moduleName turns a module file path into the name the kernel uses (dashes become
// underscores, as in /proc/modules).
func moduleName(p string) string {
	base := path.Base(p)
	for _, ext := range []string{".ko.xz", ".ko.zst", ".ko.gz", ".ko"} {
		if strings.HasSuffix(base, ext) {
			base = strings.TrimSuffix(base, ext)
			break
		}
	}
	return strings.ReplaceAll(base, "-", "_")
}

// parseModulesDep reads the depmod format: "kernel/a.ko: kernel/b.ko kernel/c.ko".
func parseModulesDep(r io.Reader) (*moduleDeps, error) {
	md := &moduleDeps{path: map[string]string{}, deps: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		mod, rest, ok := strings.Cut(text, ":")
		if !ok || strings.TrimSpace(mod) == "" {
			return nil, fmt.Errorf("failed to parse modules.dep line %d %q: want \"path.ko: dep.ko ...\"", line, text)
		}
		mod = strings.TrimSpace(mod)
		name := moduleName(mod)
		if _, dup := md.path[name]; dup {
			return nil, fmt.Errorf("failed to parse modules.dep line %d: module %s is listed twice", line, name)
		}
		md.path[name] = mod
		for _, d := range strings.Fields(rest) {
			md.deps[name] = append(md.deps[name], moduleName(d))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read modules.dep: %w", err)
	}
	return md, nil
}

// parseBuiltin reads modules.builtin (one path per line) into a set of module names.
func parseBuiltin(r io.Reader) (map[string]bool, error) {
	set := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if p := strings.TrimSpace(sc.Text()); p != "" {
			set[moduleName(p)] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read modules.builtin: %w", err)
	}
	return set, nil
}

// resolve returns the modules to load for wanted, dependencies first, each once.
// Modules built into the kernel are skipped; a name that is neither a module nor
// built in, or a dependency cycle, is an error.
func (md *moduleDeps) resolve(wanted []string, builtin map[string]bool) ([]string, error) {
	var order []string
	state := map[string]int{} // 0 unseen, 1 visiting, 2 done
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		name = strings.ReplaceAll(name, "-", "_")
		switch state[name] {
		case 1:
			return fmt.Errorf("failed to resolve kernel modules: dependency cycle %s", strings.Join(append(chain, name), " → "))
		case 2:
			return nil
		}
		if _, ok := md.path[name]; !ok {
			if builtin[name] {
				state[name] = 2
				return nil
			}
			return fmt.Errorf("failed to resolve kernel modules: %s (needed by %s) is neither in modules.dep nor built in; check the kernel package's config", name, strings.Join(append([]string{"the guest"}, chain...), " → "))
		}
		state[name] = 1
		for _, d := range md.deps[name] {
			if err := visit(d, append(chain, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, name)
		return nil
	}
	for _, w := range wanted {
		if err := visit(w, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// generateModulesDep writes modules.dep for the module tree under modDir (a
// /lib/modules/<version>). Debian's package does not ship it (depmod makes it at install
// time, and this builder never installs the kernel), so it is made here from each
// module's own "depends=" field in its .modinfo section, which is what depmod also
// records. Only uncompressed .ko files are supported; Debian bookworm ships those.
func generateModulesDep(modDir string) ([]byte, error) {
	type entry struct{ rel, name string }
	var mods []entry
	err := filepath.WalkDir(modDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".ko"):
		case strings.HasSuffix(p, ".ko.xz"), strings.HasSuffix(p, ".ko.zst"), strings.HasSuffix(p, ".ko.gz"):
			return fmt.Errorf("module %s is compressed; this builder reads only plain .ko files", p)
		default:
			return nil
		}
		rel, err := filepath.Rel(modDir, p)
		if err != nil {
			return err
		}
		mods = append(mods, entry{rel: filepath.ToSlash(rel), name: moduleName(rel)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list kernel modules under %s: %w", modDir, err)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("failed to generate modules.dep: no .ko files under %s; is it a kernel's /lib/modules/<version>?", modDir)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].rel < mods[j].rel })
	byName := make(map[string]string, len(mods))
	for _, m := range mods {
		byName[m.name] = m.rel
	}
	var buf bytes.Buffer
	for _, m := range mods {
		deps, err := modinfoDepends(filepath.Join(modDir, m.rel))
		if err != nil {
			return nil, err
		}
		buf.WriteString(m.rel + ":")
		for _, d := range deps {
			dp, ok := byName[d]
			if !ok {
				return nil, fmt.Errorf("failed to generate modules.dep: %s depends on %s, which is not in the module tree", m.rel, d)
			}
			buf.WriteString(" " + dp)
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// modinfoDepends reads the "depends=" entry of a module's .modinfo section.
func modinfoDepends(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("failed to open module: %w", err)
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read module %s as ELF: %w", file, err)
	}
	sec := ef.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("failed to read module %s: it has no .modinfo section", file)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("failed to read the .modinfo of %s: %w", file, err)
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d = strings.TrimSpace(d); d != "" {
					deps = append(deps, strings.ReplaceAll(d, "-", "_"))
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}
