package api

import (
	"encoding/json"
	"fmt"
)

// Event types of an NDJSON stream (Accept: application/x-ndjson). Output
// events come as the job writes; the last event is always "result", possibly
// preceded by one "error" event when the run failed after the stream began.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventError  = "error"
	EventResult = "result"
)

// OutputEvent is a chunk of the job's output, as it arrived. Data is UTF-8
// text, or base64 when Encoding says so (the bytes were not valid UTF-8).
type OutputEvent struct {
	Type     string `json:"type"`
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
}

// ErrorEvent reports a classified error after the stream began.
type ErrorEvent struct {
	Type  string      `json:"type"`
	Error ErrorDetail `json:"error"`
}

// Event is any line of a stream, as a client decodes it: Type says which of
// the other fields are set. Result holds the raw result object (decode it as
// ExecuteResponse or TestResponse).
type Event struct {
	Type string
	// Data is the decoded output of a stdout or stderr event.
	Data     []byte
	Error    *ErrorDetail
	Result   json.RawMessage
	Encoding string
}

// UnmarshalJSON decodes one stream line.
func (e *Event) UnmarshalJSON(b []byte) error {
	var head struct {
		Type     string          `json:"type"`
		Data     string          `json:"data"`
		Encoding string          `json:"encoding"`
		Error    json.RawMessage `json:"error"` // an object in error events, a string in results
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	e.Type, e.Encoding = head.Type, head.Encoding
	switch head.Type {
	case EventStdout, EventStderr:
		d, err := DecodeText(head.Data, head.Encoding)
		if err != nil {
			return err
		}
		e.Data = d
	case EventError:
		var d ErrorDetail
		if err := json.Unmarshal(head.Error, &d); err != nil {
			return fmt.Errorf("error event: %w", err)
		}
		e.Error = &d
	case EventResult:
		e.Result = append(json.RawMessage(nil), b...)
	}
	return nil
}
