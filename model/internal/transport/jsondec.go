package transport

import (
	"encoding/json"
	"io"
	"reflect"
	"sync"
)

// JSONDecoder decodes whole JSON documents (a reply body, the data of one
// stream event) with the results of json.Unmarshal, but keeps the decoding
// state between documents: json.Unmarshal allocates a decoder, its scanner
// stack and its error context on every call, several allocations per
// document, which a stream of hundreds of small events pays hundreds of
// times.
//
// A document the reused json.Decoder does not decode cleanly (a syntax or
// type error, data after the value) is decoded again with json.Unmarshal,
// so errors are exactly json.Unmarshal's; the Decoder, whose state an error
// may have spoiled, is then replaced. A JSONDecoder is not safe for
// concurrent use.
type JSONDecoder struct {
	dec *json.Decoder
	src docReader
	max int // largest document decoded, to keep huge buffers out of the pool
}

// docReader hands the Decoder one document, then io.EOF.
type docReader struct{ data []byte }

func (r *docReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// Unmarshal decodes data into v as json.Unmarshal(data, v) does. v must
// point to a zero value (as if just declared).
func (j *JSONDecoder) Unmarshal(data []byte, v any) error {
	doc := trimJSONSpace(data)
	if len(doc) == 0 {
		return json.Unmarshal(data, v)
	}
	if j.dec == nil {
		j.dec = json.NewDecoder(&j.src)
	}
	j.max = max(j.max, len(doc))
	j.src.data = doc
	start := j.dec.InputOffset()
	if err := j.dec.Decode(v); err == nil && j.dec.InputOffset()-start == int64(len(doc)) && len(j.src.data) == 0 {
		return nil
	}
	// Let json.Unmarshal say what is wrong, from scratch.
	j.dec, j.src.data = nil, nil
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return json.Unmarshal(data, v)
}

// trimJSONSpace cuts the whitespace JSON allows around a value (and only
// that: bytes.TrimSpace would also cut what json.Unmarshal rejects).
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

var jsonDecoders sync.Pool

// GetJSONDecoder returns a JSONDecoder from a pool; PutJSONDecoder gives it
// back.
func GetJSONDecoder() *JSONDecoder {
	if j, ok := jsonDecoders.Get().(*JSONDecoder); ok {
		return j
	}
	return new(JSONDecoder)
}

// PutJSONDecoder returns j to the pool unless it decoded very large
// documents (its buffer is as large as the largest).
func PutJSONDecoder(j *JSONDecoder) {
	if j.max > 256<<10 {
		return
	}
	j.src.data = nil
	jsonDecoders.Put(j)
}
