package config

import (
	"net"
	"net/url"
	"os"
	"strings"
)

// A vault's own config file is written by whoever wrote the vault: a
// planted or cloned vault is hostile input. From such a file loci talks
// only to model servers on this machine, and never lets the file choose
// which secret is sent to a server elsewhere. Remote providers are the
// user's choice: a LOCI_CONFIG file or the LOCI_EMBED_* / LOCI_AI_*
// variables.

const remoteRule = "a vault's own config may only name a model server on this machine (base_url http://localhost:..., 127.0.0.1 or [::1]): " +
	"a planted or cloned vault could otherwise send your notes, and the key it names, to any server; " +
	"configure a remote provider in a LOCI_CONFIG file or with LOCI_EMBED_* / LOCI_AI_* variables"

// networkProblems applies that rule to a decoded vault file. The
// environment is read because it overrides the file: a base URL the user
// set there is the user's choice, but a key the file names is not.
func networkProblems(f *File) []Problem {
	var out []Problem
	check := func(section, provider, envProvider, base, envBase, keyEnv, key, envKey string, defaults map[string]string) {
		if v := os.Getenv(envProvider); v != "" {
			provider = v
		}
		provider = strings.ToLower(strings.TrimSpace(provider))
		userBase := os.Getenv(envBase)
		eff := base
		if userBase != "" {
			eff = userBase
		}
		if eff == "" {
			eff = defaults[provider]
		}
		if eff == "" || IsLoopbackURL(eff) {
			return
		}
		if userBase == "" {
			k := section + ".base_url"
			if base == "" {
				k = section + ".provider"
			}
			out = append(out, Problem{Key: k, Line: f.lines[k], Message: redactURL(eff) + " is not on this machine; " + remoteRule})
			return
		}
		// The user sent this vault's provider elsewhere; the file may still
		// not pick the secret that goes with it.
		if os.Getenv(envKey) == "" {
			for _, k := range []string{"api_key_env", "api_key"} {
				if (k == "api_key_env" && keyEnv != "") || (k == "api_key" && key != "") {
					p := section + "." + k
					out = append(out, Problem{Key: p, Line: f.lines[p], Message: "the key for " + redactURL(eff) + " (a server elsewhere) may not come from the vault's own config; set " + envKey + " or use a LOCI_CONFIG file"})
				}
			}
		}
	}
	check("embed", f.Embed.Provider, "LOCI_EMBED_PROVIDER", f.Embed.BaseURL, "LOCI_EMBED_BASE_URL", f.Embed.APIKeyEnv, f.Embed.APIKey, "LOCI_EMBED_API_KEY",
		map[string]string{"openai": "https://api.openai.com/v1", "ollama": "https://api.openai.com/v1"})
	check("ai", f.AI.Provider, "LOCI_AI_PROVIDER", f.AI.BaseURL, "LOCI_AI_BASE_URL", f.AI.APIKeyEnv, f.AI.APIKey, "LOCI_AI_API_KEY",
		map[string]string{"openai": "https://api.openai.com/v1", "ollama": "http://localhost:11434/v1"})
	return out
}

// IsLoopbackURL reports whether u names a server on this machine:
// localhost (or a name under .localhost) or a loopback address.
func IsLoopbackURL(u string) bool {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Host == "" {
		return false
	}
	h := strings.ToLower(p.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// redactURL drops a password from a URL for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	return p.Redacted()
}
