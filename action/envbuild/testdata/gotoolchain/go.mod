module example.com/newergo

go 1.25.0

toolchain go1.25.14

require golang.org/x/sync v0.18.0
