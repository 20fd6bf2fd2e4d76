package ociimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteLayout replaces dir with an OCI image layout of the images (an index, one entry per
// platform), writing each layer blob in turn and saying so on progress: a base pulled from
// a registry is read here, so this is where the time goes.
func WriteLayout(dir string, images map[string]v1.Image, progress io.Writer) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return err
	}
	for _, plat := range sortedKeys(images) {
		img := images[plat]
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		for i, l := range layers {
			if err := writeLayerBlob(p, l, fmt.Sprintf("%s layer %d/%d", plat, i+1, len(layers)), progress); err != nil {
				return err
			}
		}
		pl, err := ParsePlatform(plat)
		if err != nil {
			return err
		}
		// The layers are there: AppendImage writes the config and the manifest.
		if err := p.AppendImage(img, layout.WithPlatform(pl)); err != nil {
			return err
		}
	}
	return nil
}

func writeLayerBlob(p layout.Path, l v1.Layer, what string, progress io.Writer) error {
	start := time.Now()
	d, err := l.Digest()
	if err != nil {
		return err
	}
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	if err := p.WriteBlob(d, rc); err != nil {
		return err
	}
	fmt.Fprintf(progress, "  wrote %s %s (%s) in %s\n", what, Short(d), Size(size), Elapsed(start))
	return nil
}

// WriteTarball writes img as a `docker load`-able tarball tagged tag.
func WriteTarball(file, tag string, img v1.Image, progress io.Writer) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	updates, finish := reportUpdates("tarball "+file, progress)
	err = tarball.WriteToFile(file, t, img, tarball.WithProgress(updates))
	finish(err)
	return err
}

// Push sends img to ref, reporting bytes as they go.
func Push(ctx context.Context, ref string, img v1.Image, progress io.Writer) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	updates, finish := reportUpdates("push "+ref, progress)
	err = remote.Write(r, img, append(RemoteOptions(ctx), remote.WithProgress(updates))...)
	finish(err)
	return err
}

// reportEvery is how often a transfer in progress prints a line.
const reportEvery = 2 * time.Second

// reportUpdates prints a transfer's bytes every reportEvery, and its total once finish is
// called with the transfer's error. The libraries differ in how they end the updates
// (remote closes the channel, tarball sends io.EOF and leaves it open), so the end is the
// caller's word, not the channel's.
func reportUpdates(what string, w io.Writer) (chan<- v1.Update, func(error)) {
	updates := make(chan v1.Update, 64)
	finished, done := make(chan error), make(chan struct{})
	go func() {
		defer close(done)
		start, last := time.Now(), time.Now()
		var u v1.Update
		record := func(next v1.Update) {
			if next.Total > 0 || next.Complete > 0 {
				u.Total, u.Complete = next.Total, next.Complete
			}
		}
		in := (<-chan v1.Update)(updates)
		for {
			select {
			case next, ok := <-in:
				if !ok {
					in = nil
					continue
				}
				record(next)
				if time.Since(last) >= reportEvery {
					fmt.Fprintf(w, "  %s: %s of %s\n", what, Size(u.Complete), Size(u.Total))
					last = time.Now()
				}
			case err := <-finished:
				for drained := false; in != nil && !drained; {
					select {
					case next, ok := <-in:
						if !ok {
							in = nil
						} else {
							record(next)
						}
					default:
						drained = true
					}
				}
				if err == nil {
					fmt.Fprintf(w, "  %s: %s in %s\n", what, Size(u.Complete), Elapsed(start))
				}
				return
			}
		}
	}()
	return updates, func(err error) {
		finished <- err
		<-done
	}
}

// Elapsed is the time since start as progress lines show it.
func Elapsed(start time.Time) time.Duration {
	return time.Since(start).Round(100 * time.Millisecond)
}

func sortedKeys(m map[string]v1.Image) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
