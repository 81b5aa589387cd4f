package httpx

// LogRequest is logRequest, for the request line's test and benchmark,
// which run through observe's logger (observe imports httpx).
var LogRequest = logRequest
