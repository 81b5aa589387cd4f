package sqlstore

import (
	"fmt"
	"time"
)

// sqliteTimeFormats are the text forms SQLite hands back where the driver
// cannot see a column's declared type (RETURNING, compound SELECTs) and so
// does not convert it to time.Time itself.
var sqliteTimeFormats = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	time.RFC3339Nano,
}

// timeValue scans a timestamp from either engine into UTC.
type timeValue time.Time

func (t *timeValue) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*t = timeValue(v.UTC())
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	default:
		return fmt.Errorf("timestamp: cannot scan %T", src)
	}
}

func (t *timeValue) parse(s string) error {
	for _, f := range sqliteTimeFormats {
		if p, err := time.Parse(f, s); err == nil {
			*t = timeValue(p.UTC())
			return nil
		}
	}
	return fmt.Errorf("timestamp: unreadable value %q", s)
}
