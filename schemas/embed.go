// Package schemas carries the repository's schemas inside the binary, so
// `platform events check` works wherever it runs.
package schemas

import (
	"embed"
	"io/fs"
)

//go:embed events
var files embed.FS

// Events is schemas/events as built into the binary: the catalog and one
// payload schema per event type, with its examples.
func Events() fs.FS {
	sub, err := fs.Sub(files, "events")
	if err != nil {
		panic(err) // "events" is a valid path: fs.Sub cannot fail on it
	}
	return sub
}
