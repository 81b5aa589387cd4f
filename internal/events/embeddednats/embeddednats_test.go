package embeddednats

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStartServesJetStreamAndKeepsItsStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	url, shutdown, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatalf("JetStream: %v", err)
	}
	if _, err := js.Publish(ctx, "s.one", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	shutdown()
	shutdown() // a second call is harmless
	if _, err := os.Stat(filepath.Join(dir, "nats")); err != nil {
		t.Fatalf("store not under the directory: %v", err)
	}

	// A new server on the same directory has the stream and its message.
	url2, shutdown2, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown2()
	nc2, err := nats.Connect(url2)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, _ := jetstream.New(nc2)
	str, err := js2.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := str.GetMsg(ctx, 1)
	if err != nil {
		t.Fatalf("message after restart: %v", err)
	}
	if string(msg.Data) != "kept" {
		t.Fatalf("message after restart: %q", msg.Data)
	}
}

func TestStartServerNeedsADirectory(t *testing.T) {
	if _, err := StartServer(context.Background(), Options{}); err == nil {
		t.Fatal("started without a store directory")
	}
}
