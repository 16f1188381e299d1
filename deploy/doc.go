// Package deploy holds what runs the server outside a Go program: the
// container image (Dockerfile, built from the repository root with
// .dockerignore beside it). It has no Go code of its own; its tests check
// the Dockerfile as BuildKit parses it: the stages and their order, that
// the build stages run the scripts `make` runs, and that the image starts
// tritonserver as an unprivileged user with Triton's ports.
package deploy
