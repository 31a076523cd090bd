package catalog

import "testing"

func TestExpandEnv(t *testing.T) {
	t.Setenv("HITCH_TEST_ADDR", "127.0.0.1:9191")
	t.Setenv("HITCH_TEST_EMPTY", "")
	for _, tc := range []struct{ in, want, err string }{
		{in: "http://127.0.0.1:8090/mcp", want: "http://127.0.0.1:8090/mcp"},
		{in: "http://${HITCH_TEST_ADDR}/mcp", want: "http://127.0.0.1:9191/mcp"},
		{in: "http://${HITCH_TEST_ADDR:-127.0.0.1:8090}/mcp", want: "http://127.0.0.1:9191/mcp"},
		{in: "http://${HITCH_TEST_EMPTY:-127.0.0.1:8090}/mcp", want: "http://127.0.0.1:8090/mcp"},
		{in: "http://${HITCH_TEST_UNSET:-h}:${HITCH_TEST_UNSET:-1}/x$y", want: "http://h:1/x$y"},
		{in: "http://${HITCH_TEST_ADDR/mcp", err: `"${HITCH_TEST_ADDR/mcp": ${ without its closing }`},
		{in: "http://${1X}/mcp", err: "${1X}: not an environment variable's name (A-Z, a-z, 0-9 and _, not starting with a digit)"},
	} {
		got, err := expandEnv(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("expandEnv(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
