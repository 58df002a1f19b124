package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestDeployFiles checks what no Docker engine here can: docker-compose.yml and the files it mounts
// parse, the scaled services (api, worker) have no fixed container name or host port, Prometheus
// scrapes the port METRICS_ADDR serves, and every vigil_ metric the Grafana dashboard queries is
// one the processes export.
func TestDeployFiles(t *testing.T) {
	var compose struct {
		Env      map[string]string `yaml:"x-vigil-env"`
		Services map[string]struct {
			ContainerName string         `yaml:"container_name"`
			Ports         []string       `yaml:"ports"`
			Volumes       []string       `yaml:"volumes"`
			Environment   map[string]any `yaml:"environment"`
			Profiles      []string       `yaml:"profiles"`
		} `yaml:"services"`
	}
	readYAML(t, "../../docker-compose.yml", &compose)
	for _, name := range []string{"api", "worker"} {
		svc, ok := compose.Services[name]
		require.True(t, ok, name)
		require.Empty(t, svc.ContainerName, "%s must scale", name)
		require.Empty(t, svc.Ports, "%s must scale: no host port", name)
	}
	require.Equal(t, ":9464", compose.Env["METRICS_ADDR"])
	require.Equal(t, "postgres", compose.Env["RATE_LIMIT_STORE"])
	require.Equal(t, []string{"grafana"}, compose.Services["grafana"].Profiles)
	for _, svc := range compose.Services {
		for _, v := range svc.Volumes {
			if src, _, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(src, "./") {
				_, err := os.Stat("../../" + src)
				require.NoError(t, err, "mounted file %s", src)
			}
		}
	}

	var prom struct {
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "../../deploy/prometheus/prometheus.yml", &prom)
	jobs := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		jobs[sc.JobName] = true
		for _, d := range sc.DNSSDConfigs {
			require.Equal(t, 9464, d.Port, sc.JobName)
			_, ok := compose.Services[d.Names[0]]
			require.True(t, ok, "scraped service %s exists", d.Names[0])
		}
	}
	require.True(t, jobs["vigil-api"] && jobs["vigil-worker"] && jobs["temporal"], "jobs: %v", jobs)

	var ds, provider map[string]any
	readYAML(t, "../../deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	readYAML(t, "../../deploy/grafana/provisioning/dashboards/vigil.yml", &provider)
	raw, err := os.ReadFile("../../deploy/grafana/dashboards/vigil-overview.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Panels)
	exported := map[string]bool{}
	src, err := os.ReadFile("../../kit/metrics/api.go")
	require.NoError(t, err)
	store, err := os.ReadFile("../../kit/metrics/store.go")
	require.NoError(t, err)
	worker, err := os.ReadFile("../../kit/metrics/worker.go")
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`"(vigil_[a-z_]+)"`).FindAllStringSubmatch(string(src)+string(store)+string(worker), -1) {
		exported[m[1]] = true
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range regexp.MustCompile(`vigil_[a-z_]+`).FindAllString(tg.Expr, -1) {
				m = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				require.True(t, exported[m], "panel %q queries %s, which no process exports", p.Title, m)
			}
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), path)
}
