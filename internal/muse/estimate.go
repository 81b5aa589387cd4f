package muse

import (
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// The estimator counts tokens with tiktoken's cl100k_base encoding, read
// from the tables the offline loader embeds in the binary: nothing is
// fetched at run time (muse.md section 4). Counts are estimates for any
// model but OpenAI's own; a usage row says so.
var estimator struct {
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
}

func encoding() (*tiktoken.Tiktoken, error) {
	estimator.once.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		estimator.enc, estimator.err = tiktoken.GetEncoding("cl100k_base")
	})
	return estimator.enc, estimator.err
}

// CountTokens returns the number of tokens in text; a byte count divided
// by four if the encoding cannot load.
func CountTokens(text string) int64 {
	if text == "" {
		return 0
	}
	enc, err := encoding()
	if err != nil {
		return int64(len(text)+3) / 4
	}
	return int64(len(enc.EncodeOrdinary(text)))
}

// PromptTokens estimates a prompt as OpenAI counts chat messages: each
// message's content and role, three tokens of framing per message and
// three to prime the reply.
func PromptTokens(msgs []Message) int64 {
	n := int64(3)
	for _, m := range msgs {
		n += 3 + CountTokens(m.Role) + CountTokens(m.Content)
	}
	return n
}
