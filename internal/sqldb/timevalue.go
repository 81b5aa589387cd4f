package sqldb

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

// TimeValue scans a timestamp from either engine into UTC: a store scans
// into (*sqldb.TimeValue)(&t) where t is a time.Time.
type TimeValue time.Time

// Scan implements sql.Scanner.
func (t *TimeValue) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*t = TimeValue(v.UTC())
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	default:
		return fmt.Errorf("timestamp: cannot scan %T", src)
	}
}

func (t *TimeValue) parse(s string) error {
	for _, f := range sqliteTimeFormats {
		if p, err := time.Parse(f, s); err == nil {
			*t = TimeValue(p.UTC())
			return nil
		}
	}
	return fmt.Errorf("timestamp: unreadable value %q", s)
}

// NullTime is a nullable TimeValue.
type NullTime struct {
	Time  TimeValue
	Valid bool
}

// Scan implements sql.Scanner.
func (n *NullTime) Scan(src any) error {
	if src == nil {
		n.Valid = false
		return nil
	}
	n.Valid = true
	return n.Time.Scan(src)
}

// Ptr is the time, or nil when NULL.
func (n NullTime) Ptr() *time.Time {
	if !n.Valid {
		return nil
	}
	t := time.Time(n.Time)
	return &t
}
