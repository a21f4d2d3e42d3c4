package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/x402"
)

// PaymentConfig is how the server pays sellers: the payer (nil without a key) and
// the hosts it may reach on private addresses; and the hosts webhooks may reach there.
type PaymentConfig struct {
	Payer      *payment.Payer
	AllowHosts []string
	// WebhookAllowHosts are WEBHOOK_ALLOW_HOSTS: hosts, or host:port, webhook
	// deliveries may reach on a private address.
	WebhookAllowHosts []string
	// Chains are X402_RPC_URLS: the JSON-RPC endpoints a payment whose outcome is
	// unknown is settled from (nil: such payments stay unknown).
	Chains *x402.Chains
	// Lease is PAYMENT_LEASE: how long a payment whose replica stopped renewing it
	// waits before another replica takes it up (0: the service's default, 15s).
	Lease time.Duration
	// MaxAuthorization is X402_MAX_AUTHORIZATION: the longest any signed
	// authorization is valid (0: the service's default, ten minutes), whatever
	// maxTimeoutSeconds the seller's offer asks.
	MaxAuthorization time.Duration
}

// chainTimeout bounds one look-up of an authorization on a chain.
const chainTimeout = 10 * time.Second

// defaultPayerNetworks are where a configured payer pays unless
// X402_PAYER_NETWORKS says otherwise: Base, in USDC.
var defaultPayerNetworks = payment.Networks{"eip155:8453"}

// defaultSolanaNetworks are where a Solana payer pays unless SOLANA_PAYER_NETWORKS
// says otherwise: Solana's mainnet, in USDC.
var defaultSolanaNetworks = payment.Networks{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"}

// loadPaymentConfig reads X402_PAYER_KEY (a secp256k1 private key in hex) or
// X402_PAYER_KEY_FILE (a file holding one), X402_PAYER_NETWORKS (CAIP-2 networks the
// key is funded on, comma-separated; a test network only when named) and
// PAYMENT_ALLOW_HOSTS (hosts, or host:port, that payments, quotes and probes may
// reach on private addresses; empty by default) and X402_RPC_URLS (network=URL
// pairs, comma-separated: where the state of an authorization is read) and
// PAYMENT_LEASE; and for Solana SOLANA_PAYER_KEY (a keypair in base58 or as a JSON
// array of bytes) or SOLANA_PAYER_KEY_FILE (a file holding one, such as
// solana-keygen writes), SOLANA_PAYER_NETWORKS (mainnet by default; devnet when
// named) and SOLANA_RPC_URL (the RPC recent blockhashes are read from, and
// payments whose outcome is unknown looked up in: one URL, or network=URL pairs);
// and X402_MAX_AUTHORIZATION. Errors never quote a key or the RPC's URL.
func loadPaymentConfig(getenv func(string) string) (PaymentConfig, error) {
	var c PaymentConfig
	var err error
	if c.AllowHosts, err = allowHosts(getenv, "PAYMENT_ALLOW_HOSTS"); err != nil {
		return c, err
	}
	if c.WebhookAllowHosts, err = allowHosts(getenv, "WEBHOOK_ALLOW_HOSTS"); err != nil {
		return c, err
	}
	if v := getenv("PAYMENT_LEASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 10*time.Minute {
			return c, fmt.Errorf("PAYMENT_LEASE %q: want a duration from 1s to 10m", v)
		}
		c.Lease = d
	}
	if v := getenv("X402_MAX_AUTHORIZATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second || d > time.Hour {
			return c, fmt.Errorf("X402_MAX_AUTHORIZATION %q: want a duration from 10s to 1h", v)
		}
		c.MaxAuthorization = d
	}
	if v := getenv("X402_RPC_URLS"); v != "" {
		if c.Chains, err = x402.ParseChains(v, &http.Client{Timeout: chainTimeout}); err != nil {
			return c, fmt.Errorf("X402_RPC_URLS: %w", err)
		}
	}
	payer := &payment.Payer{}
	key, err := secret(getenv, "X402_PAYER_KEY")
	if err != nil {
		return c, err
	}
	if key != "" {
		if payer.Signer, err = x402.ParseSigner(key); err != nil {
			return c, errors.New("X402_PAYER_KEY: want 32 bytes of hex, a secp256k1 private key")
		}
		payer.Networks = defaultPayerNetworks
		if v := getenv("X402_PAYER_NETWORKS"); v != "" {
			if payer.Networks, err = payment.ParseNetworks(v); err != nil {
				return c, fmt.Errorf("X402_PAYER_NETWORKS: %w", err)
			}
		}
	} else if getenv("X402_PAYER_NETWORKS") != "" {
		return c, errors.New("X402_PAYER_NETWORKS is set without X402_PAYER_KEY or X402_PAYER_KEY_FILE")
	}
	if key, err = secret(getenv, "SOLANA_PAYER_KEY"); err != nil {
		return c, err
	}
	if key != "" {
		if payer.Solana, err = x402.ParseSolanaSigner(key); err != nil {
			return c, errors.New("SOLANA_PAYER_KEY: want a Solana keypair, 64 bytes in base58 or the JSON array of bytes solana-keygen writes")
		}
		payer.SolanaNetworks = defaultSolanaNetworks
		if v := getenv("SOLANA_PAYER_NETWORKS"); v != "" {
			if payer.SolanaNetworks, err = payment.ParseSolanaNetworks(v); err != nil {
				return c, fmt.Errorf("SOLANA_PAYER_NETWORKS: %w", err)
			}
		}
		v := getenv("SOLANA_RPC_URL")
		if v == "" {
			return c, errors.New("SOLANA_PAYER_KEY is set without SOLANA_RPC_URL, where the recent blockhashes its payments are signed with are read")
		}
		rpc, err := x402.ParseSolanaRPC(v, payer.SolanaNetworks, &http.Client{Timeout: chainTimeout})
		if err != nil {
			// The URL may carry a provider's key: it is not quoted.
			return c, errors.New("SOLANA_RPC_URL: want an http(s) URL, or Solana network=URL pairs separated by commas")
		}
		// The same RPC gives the slots upto channels open at, and tells whether a
		// payment whose outcome is unknown landed, and what an upto channel moved.
		payer.Blockhashes, payer.Slots, payer.Landings, payer.Channels = rpc, rpc, rpc, rpc
	} else if getenv("SOLANA_PAYER_NETWORKS") != "" || getenv("SOLANA_RPC_URL") != "" {
		return c, errors.New("SOLANA_PAYER_NETWORKS or SOLANA_RPC_URL is set without SOLANA_PAYER_KEY or SOLANA_PAYER_KEY_FILE")
	}
	if payer.Signer != nil || payer.Solana != nil {
		c.Payer = payer
	}
	return c, nil
}

// secret reads the key in name, or in the file name_FILE names; never both. Errors
// never quote the key.
func secret(getenv func(string) string, name string) (string, error) {
	key, file := getenv(name), getenv(name+"_FILE")
	switch {
	case key != "" && file != "":
		return "", fmt.Errorf("%s and %s_FILE are both set: set one", name, name)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_FILE: %w", name, err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", fmt.Errorf("%s_FILE: the file is empty", name)
		}
		return string(b), nil
	}
	return key, nil
}

// allowHosts reads a comma-separated list of hosts, or host:port, that may be reached
// on a private address.
func allowHosts(getenv func(string) string, name string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(getenv(name), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			if strings.ContainsAny(h, "/ @") {
				return nil, fmt.Errorf("%s: %q is not a host or host:port", name, h)
			}
			out = append(out, h)
		}
	}
	return out, nil
}
