package main

import (
	"errors"
	"net/url"

	"github.com/waystation/waystation/internal/captcha"
)

// loadCaptchaSolver reads CAPTCHA_SOLVER_URL (the base URL of a solver service
// speaking the createTask / getTaskResult JSON API; unset: people answer image
// CAPTCHAs on the approval page, and widget CAPTCHAs cannot be answered) and
// CAPTCHA_SOLVER_KEY, its client key. Errors never quote the key.
func loadCaptchaSolver(getenv func(string) string) (*captcha.Solver, error) {
	raw := getenv("CAPTCHA_SOLVER_URL")
	if raw == "" {
		if getenv("CAPTCHA_SOLVER_KEY") != "" {
			return nil, errors.New("CAPTCHA_SOLVER_KEY is set without CAPTCHA_SOLVER_URL")
		}
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, errors.New("CAPTCHA_SOLVER_URL: want the solver's base URL, such as https://api.2captcha.com, without credentials or a query")
	}
	return &captcha.Solver{URL: raw, Key: getenv("CAPTCHA_SOLVER_KEY")}, nil
}
