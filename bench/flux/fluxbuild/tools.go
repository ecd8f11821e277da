//go:build tools

// Package fluxbuild pins the two Flux controllers bench/flux/build.sh builds in go.mod and go.sum.
package fluxbuild

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
