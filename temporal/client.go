package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
)

// errNoCodec: every client Vigil creates encrypts what it writes (API.md §16).
var errNoCodec = errors.New("temporal client: no payload codec configured (every client encrypts its payloads)")

// dialLimit bounds Dial when the caller's context has no deadline of its own.
const dialLimit = 10 * time.Second

// Dial connects to Temporal (checking the server answers) with the process logger adapted for the
// SDK. Create one client per process and Close it on shutdown.
func Dial(ctx context.Context, cfg Config, log *slog.Logger) (client.Client, error) {
	if cfg.HostPort == "" {
		return nil, errors.New("dial temporal: no host:port configured")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialLimit)
		defer cancel()
	}
	opts, err := clientOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s (namespace %s): %w", cfg.HostPort, cfg.namespace(), err)
	}
	return c, nil
}

// clientOptions is what Dial and DialLazy share: address, namespace, TLS and credentials, the
// payload codec, the metrics handler and the slog adapter.
func clientOptions(cfg Config, log *slog.Logger) (client.Options, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Codec == nil {
		return client.Options{}, errNoCodec
	}
	dc := DataConverter(cfg.Codec)
	opts := client.Options{
		HostPort:       cfg.HostPort,
		Namespace:      cfg.namespace(),
		Logger:         sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
		MetricsHandler: cfg.Metrics,
		DataConverter:  dc,
		// Failure messages and stack traces (an activity's error can name an indicator or a host) go
		// into the encoded attributes instead of the history's clear text.
		FailureConverter: FailureConverter(dc),
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return client.Options{}, err
	}
	opts.ConnectionOptions.TLS = tlsCfg
	if cfg.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.APIKey)
	}
	return opts, nil
}

// tlsConfig builds the client's TLS settings from the PEM files; nil when none is configured.
func (cfg Config) tlsConfig() (*tls.Config, error) {
	if cfg.TLSCertFile == "" && cfg.TLSKeyFile == "" && cfg.TLSCAFile == "" && cfg.TLSServerName == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.TLSServerName}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("temporal TLS: a client certificate needs both its certificate and its key file")
	}
	if cfg.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS: load client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	if cfg.TLSCAFile != "" {
		pem, err := os.ReadFile(cfg.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal TLS: %s holds no PEM certificate", cfg.TLSCAFile)
		}
		t.RootCAs = pool
	}
	return t, nil
}

// DataConverter is the SDK's default data converter with codec applied to every payload: what every
// client, worker and replayer of Vigil's uses.
func DataConverter(codec converter.PayloadCodec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)
}

// FailureConverter is the SDK's default failure converter over dc, with a failure's message and
// stack trace encoded as a payload (the history keeps only "Encoded failure").
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return sdktemporal.NewDefaultFailureConverter(sdktemporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}
