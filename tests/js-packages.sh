# Sourced by tests/run and examples/run: install Node.js when missing, and
# the pinned npm packages into the folder `worldline build-js` reads them
# from (see host/src/cli/build_js_cmd/toolchain.rs, which lists the same
# versions and checks this file against its lists):
# - its toolchain (esbuild, ComponentizeJS, TypeScript) in $js_toolchain;
# - the agent SDKs the examples and tests import (openai, the MCP SDK,
#   @anthropic-ai/sdk, the Vercel AI SDK, the OpenAI Agents SDK) in
#   $js_toolchain/agent-packages, where build-js looks up a package an
#   agent's own folder lacks.
# Each set is installed once and kept (npm's own cache makes a reinstall
# cheap); a version change installs it again.
JS_TOOLCHAIN_PACKAGES="@bytecodealliance/componentize-js@0.23.0 esbuild@0.28.2 typescript@7.0.2"
JS_AGENT_PACKAGES="@ai-sdk/openai@4.0.118 @anthropic-ai/sdk@1.10.0 @modelcontextprotocol/sdk@1.32.2 @openai/agents@0.20.0 ai@7.0.173 openai@5.23.2 zod@4.6.7"

# Install the packages "$2..." into the npm prefix $1 unless each is there
# at its version.
ensure_npm_packages() {
  local prefix="$1"
  shift
  local pkg name version
  for pkg in "$@"; do
    name="${pkg%@*}" version="${pkg##*@}"
    if ! grep -qs "\"version\": \"$version\"" "$prefix/node_modules/$name/package.json"; then
      echo "installing $* into $prefix"
      mkdir -p "$prefix"
      npm install --silent --no-audit --no-fund --save-exact --prefix "$prefix" "$@"
      return
    fi
  done
}

ensure_js_packages() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "installing Node.js"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  js_toolchain="${WORLDLINE_JS_TOOLCHAIN:-${XDG_CACHE_HOME:-$HOME/.cache}/worldline/js}"
  # shellcheck disable=SC2086 # word splitting of the lists is meant
  ensure_npm_packages "$js_toolchain" $JS_TOOLCHAIN_PACKAGES
  # shellcheck disable=SC2086
  ensure_npm_packages "$js_toolchain/agent-packages" $JS_AGENT_PACKAGES
}
