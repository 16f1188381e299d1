// Package jsontext writes JSON values the way Triton's server writes them
// (rapidjson's writer): strings with only the escapes JSON requires, and
// doubles with the shortest digits that round-trip, always with a fraction
// or an exponent, so that a reader tells 2.0 from 2. The HTTP adapter
// writes its responses with it and the HTTP client its requests.
package jsontext
