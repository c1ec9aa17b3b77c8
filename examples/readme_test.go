package examples_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's Go snippets are fragments of one program: they use the
// names the prose gives them (store, mux, key, the handlers) and the
// variables of earlier snippets. readmePrelude declares those names, so
// that every fragment compiles as the body of a function of its own.
const readmePrelude = `package readme

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v3"
	"github.com/labstack/echo/v4"

	"github.com/go-throttle/throttle/keyfuncs"
	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/overload"
	storepkg "github.com/go-throttle/throttle/throttle/store"
)

var (
	ctx        = context.Background()
	store      storepkg.Store
	mux        = http.NewServeMux()
	r          *gin.Engine
	e          *echo.Echo
	id         string
	key, user  keyfuncs.Func
	submitGin  gin.HandlerFunc
	submitEcho echo.HandlerFunc
	app        *fiber.App
	submitFiber fiber.Handler
	report     *overload.Limiter
	submit     http.Handler
	lock       *throttle.Lock
	search     *throttle.Quota
	items      *throttle.Quota
	perMinute  throttle.Rate
	burst      throttle.Rate
	hourly     throttle.Rate
	proRates   []throttle.Rate
	isPro      func(*http.Request) bool

	placeOrder, searchHandler, loginHandler, itemsHandler, syncHandler, exportHandler, reportHandler http.Handler

	syncCustomer func(ctx context.Context, id string, fence int64) error
)
`

// readmeImports are the packages a fragment may name, by the name it uses.
var readmeImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "io": "io", "log": "log",
	"http": "net/http", "netip": "net/netip", "time": "time",
	"gin": "github.com/gin-gonic/gin", "echo": "github.com/labstack/echo/v4", "fiber": "github.com/gofiber/fiber/v3",
	"redis":      "github.com/redis/go-redis/v9",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"keyfuncs":   "github.com/go-throttle/throttle/keyfuncs",
	"nethttp":    "github.com/go-throttle/throttle/nethttp",
	"ginadapter": "github.com/go-throttle/throttle/ginadapter", "echoadapter": "github.com/go-throttle/throttle/echoadapter",
	"fiberadapter": "github.com/go-throttle/throttle/fiberadapter",
	"grpc":         "google.golang.org/grpc", "grpcadapter": "github.com/go-throttle/throttle/grpcadapter",
	"flow":     "github.com/go-throttle/throttle/throttle/flow",
	"throttle": "github.com/go-throttle/throttle/throttle", "guard": "github.com/go-throttle/throttle/throttle/guard",
	"overload": "github.com/go-throttle/throttle/throttle/overload",
	"memstore": "github.com/go-throttle/throttle/throttle/memstore", "redisstore": "github.com/go-throttle/throttle/throttle/redisstore",
	"promthrottle": "github.com/go-throttle/throttle/throttle/promthrottle", "otelthrottle": "github.com/go-throttle/throttle/throttle/otelthrottle",
}

var goFence = regexp.MustCompile("(?s)```go\n(.*?)```")

// readmeSnippets returns the README's Go blocks: the complete programs
// (package main) and the fragments.
func readmeSnippets(t *testing.T) (programs, fragments []string) {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	for _, m := range goFence.FindAllStringSubmatch(string(b), -1) {
		if strings.HasPrefix(m[1], "package main") {
			programs = append(programs, m[1])
		} else {
			fragments = append(fragments, m[1])
		}
	}
	return programs, fragments
}

// fragmentFunc wraps a fragment in a function named name, imports the
// packages it names, and uses each variable it declares (an unused one is a
// compile error in Go, though a reader's program goes on to use it).
func fragmentFunc(t *testing.T, name, src string) (body string, imports []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+src+"\n}", 0)
	require.NoError(t, err, "a README fragment does not parse:\n%s", src)
	var declared []string // in the fragment's own scope, not in a closure's
	for _, s := range f.Decls[0].(*ast.FuncDecl).Body.List {
		if a, ok := s.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
			for _, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					declared = append(declared, id.Name)
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok && readmeImports[x.Name] != "" {
				imports = append(imports, x.Name)
			}
		}
		return true
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "func %s() {\n%s\n", name, src)
	for _, d := range slices.Compact(slices.Sorted(slices.Values(declared))) {
		fmt.Fprintf(&sb, "\t_ = %s\n", d)
	}
	sb.WriteString("}\n")
	return sb.String(), imports
}

// goBuild builds pkg, a directory of the module that exists only in files
// (absolute path to source), with go build -overlay, into out.
func goBuild(t *testing.T, pkg, out string, files map[string]string) {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	tmp := t.TempDir()
	replace := map[string]string{}
	for name, src := range files {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
		replace[filepath.Join(root, pkg, name)] = p
	}
	ov, err := json.Marshal(map[string]any{"Replace": replace})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "overlay.json"), ov, 0o600))
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(tmp, "overlay.json"), "-o", out, "./"+pkg)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the README's code:\n%s", b)
}

// TestReadmeFragments compiles every Go fragment of the README, each in a
// function of its own beside readmePrelude.
func TestReadmeFragments(t *testing.T) {
	_, fragments := readmeSnippets(t)
	require.GreaterOrEqual(t, len(fragments), 10, "the README's Go fragments were not found")
	var funcs strings.Builder
	var names []string
	for i, src := range fragments {
		body, imports := fragmentFunc(t, fmt.Sprintf("fragment%d", i+1), src)
		funcs.WriteString(body)
		names = append(names, imports...)
	}
	var src strings.Builder
	src.WriteString("package readme\n\nimport (\n")
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		fmt.Fprintf(&src, "\t%q\n", readmeImports[n])
	}
	src.WriteString(")\n\n")
	src.WriteString(funcs.String())
	goBuild(t, "internal/readme", os.DevNull, map[string]string{
		"prelude.go": readmePrelude, "fragments.go": src.String(),
	})
}

// TestReadmeProgram builds the README's complete program as it is printed,
// on a free port instead of 8080, runs it and sends its curl twice: the
// first is admitted, the copy gets 429 with the fields the README shows.
func TestReadmeProgram(t *testing.T) {
	programs, _ := readmeSnippets(t)
	require.Len(t, programs, 1, "the README has one complete program")
	src := programs[0]
	require.Contains(t, src, `"127.0.0.1:8080"`)
	require.LessOrEqual(t, strings.Count(src, "\n"), 40, "the complete program stays under 40 lines")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	exe := filepath.Join(t.TempDir(), "readme")
	goBuild(t, "internal/readmeprogram", exe, map[string]string{
		"main.go": strings.Replace(src, "127.0.0.1:8080", addr, 1),
	})

	cmd := exec.Command(exe)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client := &http.Client{Timeout: 5 * time.Second}
	post := func() *http.Response {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/submit", nil)
		require.NoError(t, err)
		req.Header.Set("X-User-ID", "42")
		res, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		return res
	}
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the README's program did not listen")

	first, second := post(), post()
	assert.Equal(t, http.StatusOK, first.StatusCode)
	assert.Equal(t, http.StatusTooManyRequests, second.StatusCode)
	assert.NotEmpty(t, second.Header.Get("Retry-After"))
	assert.Equal(t, `"submit";q=1;w=5`, second.Header.Get("RateLimit-Policy"))
	assert.Equal(t, "application/problem+json", second.Header.Get("Content-Type"))
}
