package main

import (
	"bytes"
	"io"
)

type ioReadCloser = io.ReadCloser

// nopCloser gives tarball.LayerFromOpener a fresh reader over the layer's bytes.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
