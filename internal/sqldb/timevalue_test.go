package sqldb

import (
	"testing"
	"time"
)

func TestTimeValueScan(t *testing.T) {
	want := time.Date(2026, 11, 27, 9, 30, 15, 123456000, time.UTC)
	tests := []struct {
		name string
		src  any
	}{
		{"TimeInAnotherZone", want.In(time.FixedZone("CET", 3600))},
		{"SQLiteTextWithOffset", "2026-11-27 10:30:15.123456+01:00"},
		{"SQLiteTextUTC", "2026-11-27 09:30:15.123456Z"},
		{"SQLiteTextBare", "2026-11-27 09:30:15.123456"},
		{"RFC3339Bytes", []byte("2026-11-27T09:30:15.123456Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got TimeValue
			if err := got.Scan(tt.src); err != nil {
				t.Fatalf("Scan(%v) = %v", tt.src, err)
			}
			if g := time.Time(got); !g.Equal(want) || g.Location() != time.UTC {
				t.Errorf("Scan(%v) = %v, want %v in UTC", tt.src, g, want)
			}
		})
	}
	for _, bad := range []any{"yesterday", 42} {
		var got TimeValue
		if err := got.Scan(bad); err == nil {
			t.Errorf("Scan(%v) = nil, want an error", bad)
		}
	}
}

func TestNullTimeScan(t *testing.T) {
	var n NullTime
	if err := n.Scan(nil); err != nil || n.Ptr() != nil {
		t.Errorf("Scan(nil) = %v, Ptr %v; want no error and nil", err, n.Ptr())
	}
	if err := n.Scan("2026-11-27 09:30:15"); err != nil || n.Ptr() == nil || n.Ptr().Hour() != 9 {
		t.Errorf("Scan(text) = %v, Ptr %v; want 09:30:15", err, n.Ptr())
	}
}
