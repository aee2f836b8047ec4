#!/bin/sh
# The environment's setup (.github/bumper.yml), run once when the environment is built:
# it compiles the standard library packages the tests use into Go's build cache, which
# cache_paths keeps in the environment's image, so that no run compiles them again (under
# emulation that takes half a minute).
set -eu
go version
go test -count=1 -run '^$' ./...
