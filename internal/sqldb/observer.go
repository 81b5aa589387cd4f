package sqldb

import (
	"context"
	"runtime"
	"strings"
	"sync"
)

// Observer watches a DB's operations for metrics and traces (package
// observe implements it; a DB without one pays nothing). An operation is a
// transaction (InTx) or a statement outside one (Exec, Query, QueryRow,
// ReadRow, Write, WriteRow): the statement group a store method runs,
// named by that method, never by its SQL, so the names are few and
// stable.
type Observer interface {
	// Start is called as an operation begins, op naming the function that
	// called the DB ("sqlstore.CreateUser", "outbox.claim"). It returns
	// the context the operation runs under and the function to call with
	// its outcome when it ends.
	Start(ctx context.Context, op string) (context.Context, func(error))
}

// opNames caches each calling site's operation name: resolving a program
// counter to a function name costs far more than the lookup.
var opNames sync.Map // uintptr → string

// observe starts an operation of the function two frames above it (the
// caller of Exec, InTx, …). Only called when db.Observer is set.
func (db *DB) observe(ctx context.Context) (context.Context, func(error)) {
	var pcs [1]uintptr
	// 0 runtime.Callers, 1 observe, 2 the DB method, 3 its caller.
	if runtime.Callers(3, pcs[:]) == 0 {
		return db.Observer.Start(ctx, "unknown")
	}
	name, ok := opNames.Load(pcs[0])
	if !ok {
		frame, _ := runtime.CallersFrames(pcs[:]).Next()
		name, _ = opNames.LoadOrStore(pcs[0], OperationName(frame.Function))
	}
	return db.Observer.Start(ctx, name.(string))
}

// OperationName turns a function's full name into an operation's:
// its package's last element and the function, without receiver or
// closure suffixes. "…/identity/sqlstore.(*Store).CreateUser.func1" is
// "sqlstore.CreateUser".
func OperationName(function string) string {
	if i := strings.LastIndexByte(function, '/'); i >= 0 {
		function = function[i+1:]
	}
	pkg, rest, ok := strings.Cut(function, ".")
	if !ok {
		return function
	}
	name := ""
	for part := range strings.SplitSeq(rest, ".") {
		if part == "" || strings.HasPrefix(part, "(") || closureSuffix(part) {
			continue
		}
		name = part
	}
	if name == "" {
		return pkg
	}
	return pkg + "." + name
}

// closureSuffix reports the parts the compiler adds to a closure's or a
// go statement's name: func1, gowrap2, 3.
func closureSuffix(part string) bool {
	for _, p := range []string{"func", "gowrap", "deferwrap"} {
		part = strings.TrimPrefix(part, p)
	}
	if part == "" {
		return false
	}
	for _, c := range part {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
