package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres"
)

// BazaarConfig is where `import` without a file syncs the catalog from: an x402
// Bazaar discovery endpoint, read page by page.
type BazaarConfig struct {
	URL      string
	PageSize int
	MaxPages int
	Timeout  time.Duration
}

func loadBazaarConfig(getenv func(string) string) (BazaarConfig, error) {
	c := BazaarConfig{
		URL:      getenv("BAZAAR_URL"),
		PageSize: catalog.DefaultPageSize,
		MaxPages: catalog.DefaultMaxPages,
		Timeout:  catalog.DefaultPageTimeout,
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("BAZAAR_URL %q: want the http or https URL of a discovery endpoint", c.URL)
		}
		if u.User != nil {
			return c, errors.New("BAZAAR_URL: carries user information; the sync sends no credentials")
		}
	}
	if v := getenv("BAZAAR_PAGE_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > catalog.MaxPageSize {
			return c, fmt.Errorf("BAZAAR_PAGE_SIZE %q: want a whole number from 1 to %d", v, catalog.MaxPageSize)
		}
		c.PageSize = n
	}
	if v := getenv("BAZAAR_MAX_PAGES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			return c, fmt.Errorf("BAZAAR_MAX_PAGES %q: want a whole number from 1 to 100000", v)
		}
		c.MaxPages = n
	}
	if v := getenv("BAZAAR_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 10*time.Minute {
			return c, fmt.Errorf("BAZAAR_TIMEOUT %q: want a duration from 1s to 10m", v)
		}
		c.Timeout = d
	}
	return c, nil
}

// importCatalog is the import command: the file named, or else the listing of the
// discovery endpoint BAZAAR_URL names.
func importCatalog(ctx context.Context, cfg BazaarConfig, store *postgres.Store, args []string, stdout io.Writer) error {
	switch {
	case len(args) == 1:
		return importFile(ctx, store, args[0], stdout)
	case len(args) == 0 && cfg.URL != "":
		return syncBazaar(ctx, cfg, store, stdout)
	}
	return errors.New("import takes one file, or none with BAZAAR_URL set")
}

func importFile(ctx context.Context, store *postgres.Store, path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	cat, skipped, err := catalog.ParseBazaar(f)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintf(stdout, "%s: skipped %s\n", path, s.Error())
	}
	res, err := store.LoadCatalog(ctx, cat, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d providers; %d methods inserted, %d updated, %d unchanged; %d items skipped; read and loaded in %s\n",
		path, res.Providers, res.Inserted, res.Updated, res.Unchanged, len(skipped), time.Since(start).Round(time.Millisecond))
	if len(cat.Delisted) > 0 {
		fmt.Fprintf(stdout, "%s: %d resources delisted, %d methods disabled\n", path, len(cat.Delisted), res.Disabled)
	}
	return nil
}

// syncBazaar reads the whole listing of the discovery endpoint and loads it. Only a
// complete read disables the listing's methods that vanished from it; after a failed
// or partial one, what was read is loaded and nothing is disabled.
func syncBazaar(ctx context.Context, cfg BazaarConfig, store *postgres.Store, stdout io.Writer) error {
	sync := &catalog.BazaarSync{URL: cfg.URL, PageSize: cfg.PageSize, MaxPages: cfg.MaxPages, Timeout: cfg.Timeout}
	got, syncErr := sync.Run(ctx)
	for _, s := range got.Skipped {
		fmt.Fprintf(stdout, "sync: skipped %s\n", s.Error())
	}
	total := "unknown"
	if got.Total >= 0 {
		total = strconv.Itoa(got.Total)
	}
	fmt.Fprintf(stdout, "sync: %d pages, %d items (the listing says %s), %d items skipped\n", got.Pages, got.Items, total, len(got.Skipped))
	if len(got.Catalog.Providers) == 0 {
		if syncErr != nil {
			return syncErr
		}
		return fmt.Errorf("sync: nothing to load (%s); nothing disabled", got.Incomplete)
	}
	var res postgres.LoadResult
	var err error
	if got.Complete && syncErr == nil {
		res, err = store.SyncCatalog(ctx, got.Catalog, catalog.SourceBazaar, time.Now())
	} else {
		res, err = store.LoadCatalog(ctx, got.Catalog, time.Now())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sync: %d providers; %d methods inserted, %d updated, %d unchanged, %d disabled\n",
		res.Providers, res.Inserted, res.Updated, res.Unchanged, res.Disabled)
	if syncErr != nil {
		return fmt.Errorf("%w (what was read before is loaded; nothing disabled)", syncErr)
	}
	if !got.Complete {
		fmt.Fprintf(stdout, "sync: incomplete, %s: nothing disabled\n", got.Incomplete)
	}
	return nil
}
