// Command seller runs a local x402 seller and its facilitator, for the demo and for
// trying payments without a chain: GET /v1/weather (x402 v1) and GET or POST
// /v2/report (x402 v2) answer 402 until paid, and GET /v2/solana (x402 v2, USDC on
// Solana's devnet) too; /.well-known/x402.json is its own discovery manifest, signed
// by its payee; /facilitator verifies a payment by recovering its signer (on Solana by
// checking the transfer transaction and its signatures) and settles it into the ledger
// at GET /ledger; POST /rpc answers for the ledger as a node would; POST
// /misbehave switches to another payee, a changed price or no delivery.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/waystation/waystation/internal/cmd/localserve"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", or(getenv("SELLER_ADDR"), "127.0.0.1:8081"), "listen address (default $SELLER_ADDR or 127.0.0.1:8081)")
	public := fs.Bool("public", false, "allow a listen address that is not loopback")
	cfg := seller.Config{}
	fs.StringVar(&cfg.PayeeKey, "payee-key", or(getenv("SELLER_PAYEE_KEY"), seller.DemoPayeeKey), "the payee's private key (hex): the payee is its address, and it signs the origin in the manifest")
	fs.StringVar(&cfg.PayTo, "payto", getenv("SELLER_PAYTO"), "the payee address, when it is not the key's (the manifest is then unsigned)")
	fs.StringVar(&cfg.Network, "network", seller.DefaultNetwork, "the network, CAIP-2")
	fs.StringVar(&cfg.Asset, "asset", seller.DefaultAsset, "the token address (EIP-3009, EIP-712 name USDC version 2)")
	fs.StringVar(&cfg.Price, "price", seller.DefaultPrice, "the price in atomic units")
	mode := fs.String("misbehave", seller.ModeNone, "none | wrong_payee | changed_price | no_delivery | replay_refused")
	listing := fs.Bool("listing", false, "print the paid routes at -addr as discovery items, one JSON line each (for the directory's import), and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := localserve.CheckLoopback(*addr); err != nil && !*public {
		return fmt.Errorf("%w; pass -public to listen there", err)
	}
	if cfg.PayTo != "" {
		cfg.PayeeKey = "" // a payee the key is not signs nothing
	} else if _, err := x402.ParseSigner(cfg.PayeeKey); err != nil {
		return fmt.Errorf("-payee-key: %w", err)
	}
	s := seller.New(cfg)
	if err := s.SetMode(*mode); err != nil {
		return err
	}
	if *listing {
		enc := json.NewEncoder(stdout)
		for _, it := range s.Listing("http://" + *addr) {
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return nil
	}
	return localserve.Serve(ctx, *addr, s, stdout, stderr, func(a net.Addr) string {
		return fmt.Sprintf("local x402 seller on http://%s (v1 /v1/weather, v2 /v2/report, Solana /v2/solana, ledger /ledger, discovery /discovery/resources, manifest /.well-known/x402.json, chain /rpc)", a)
	})
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
