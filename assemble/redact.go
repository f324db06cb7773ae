package assemble

import (
	"net/url"
	"strings"
)

// credentialParams are query parameters that carry a secret in the URLs
// providers document (Gemini's ?key=, proxies' ?api_key= or ?token=).
var credentialParams = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "api-key": true, "x-api-key": true,
	"token": true, "access_token": true, "auth": true, "secret": true, "client_secret": true,
	"password": true, "sig": true, "signature": true,
}

// RedactURL drops what a URL holds of credentials — a user and password,
// and query parameters that carry keys — so it can be recorded in a log.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	changed := u.User != nil
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for name := range q {
			if credentialParams[strings.ToLower(name)] {
				q.Del(name)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}
