package queue

import (
	"context"
	"sync"
	"time"
)

// entry is one message in a delete or visibility batch.
type entry struct {
	m          *Message
	visibility int32
}

// batcher groups entries into calls of up to ten, waiting at most linger
// for a batch to fill. Calls run concurrently; close flushes what is left.
type batcher struct {
	in     chan entry
	linger time.Duration
	flush  func(context.Context, []entry)
	done   chan struct{}
	calls  sync.WaitGroup

	mu     sync.RWMutex
	closed bool
}

func newBatcher(linger time.Duration, flush func(context.Context, []entry)) *batcher {
	b := &batcher{in: make(chan entry, 1024), linger: linger, flush: flush, done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *batcher) add(_ context.Context, e entry) {
	b.mu.RLock()
	if !b.closed {
		b.in <- e
		b.mu.RUnlock()
		return
	}
	b.mu.RUnlock()
	// A straggler after shutdown (a step that outlived the drain budget):
	// send it alone rather than drop it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.flush(ctx, []entry{e})
}

func (b *batcher) loop() {
	defer close(b.done)
	for {
		first, ok := <-b.in
		if !ok {
			return
		}
		batch := []entry{first}
		timer := time.NewTimer(b.linger)
	fill:
		for len(batch) < 10 {
			select {
			case e, ok := <-b.in:
				if !ok {
					break fill
				}
				batch = append(batch, e)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		b.calls.Add(1)
		go func() {
			defer b.calls.Done()
			// Deletes must land even during shutdown.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b.flush(ctx, batch)
		}()
	}
}

// close flushes pending entries and waits for every call.
func (b *batcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.in)
	}
	b.mu.Unlock()
	<-b.done
	b.calls.Wait()
}
