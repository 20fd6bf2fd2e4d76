package bedrock_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/bedrock"
)

// zeros is n bytes of an upstream's body after a prelude, from no buffer of its own.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	clear(p[:k])
	z.n -= k
	return k, nil
}

// A ConverseStream message whose prelude announces more than router.MaxStreamLineBytes is
// refused before it is read: the SDK's decoder would buffer all of it (up to 4 GiB).
func TestHugeEventStreamMessageIsRefusedUnread(t *testing.T) {
	prelude := binary.BigEndian.AppendUint32(nil, 1<<30)                          // total length: 1 GiB
	prelude = binary.BigEndian.AppendUint32(prelude, 0)                           // headers length
	prelude = binary.BigEndian.AppendUint32(prelude, crc32.ChecksumIEEE(prelude)) // a valid prelude CRC
	body := io.MultiReader(bytes.NewReader(prelude), &zeros{n: 64 << 20})         // the upstream sends 64 MiB of it
	r := bedrock.NewEventReader(io.NopCloser(body))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := r.Recv()
	runtime.ReadMemStats(&after)
	var pe *router.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "router.MaxStreamLineBytes") {
		t.Errorf("a 1 GiB message: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("allocated %d bytes before refusing the message", alloc)
	}
}

// Messages the EventWriter writes (a gateway's, or Bedrock's) are read back, a large one
// just under the cap included.
func TestEventStreamMessagesUnderTheCapAreRead(t *testing.T) {
	text := strings.Repeat("c", router.MaxStreamLineBytes-1024)
	var buf bytes.Buffer
	w := bedrock.NewEventWriter(&buf)
	for _, ev := range []router.StreamEvent{{Kind: router.EventMessageStart}, {Kind: router.EventBlockDelta, Text: text},
		{Kind: router.EventBlockStop}, {Kind: router.EventMessageStop, StopReason: router.StopEndTurn}, {Kind: router.EventMetadata}} {
		if err := w.Event(ev, 1); err != nil {
			t.Fatal(err)
		}
	}
	r := bedrock.NewEventReader(io.NopCloser(&buf))
	var got strings.Builder
	var stop string
	for {
		ev, err := r.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(ev.Text)
		if ev.Kind == router.EventMessageStop {
			stop = ev.StopReason
		}
	}
	if got.Len() != len(text) || stop != router.StopEndTurn {
		t.Errorf("read %d bytes of text and stop %q, want %d and %q", got.Len(), stop, len(text), router.StopEndTurn)
	}
}
