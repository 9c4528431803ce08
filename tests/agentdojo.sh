# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned AgentDojo package (agentdojo), which
# `worldline bench import agentdojo/...` reads and whose own utility and
# security checks the agreement test (host/tests/bench_agentdojo.rs) grades
# with. Installed once and found again by later runs (a stamp names what
# it holds). Exports WORLDLINE_AGENTDOJO_PYTHON.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
# agentdojo declares anthropic, cohere, openai, langchain and google-genai
# for its model pipelines; reading its task suites needs only what their
# imports name (the converter loads `agentdojo.agent_pipeline` without its
# `__init__`, which imports every model client; one client, google-genai,
# is still imported by the tool-result formatter the suites use): these,
# at the versions pip resolved on 2026-11-28, each without its declared
# dependencies. 20 packages, 74 MB, 21 s cold on 2026-11-28 (load 9).
AGENTDOJO_PACKAGES="agentdojo==0.1.35 deepdiff==8.6.1 orderly-set==5.5.0 docstring-parser==0.18.0 email-validator==2.4.0 dnspython==2.9.2 idna==3.20 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0 google-genai==3.6.1 google-auth==2.63.0 certifi==2026.10.19.post1 tenacity==9.2.1 websockets==17.4 rich==15.0.0 anyio==4.16.0"

ensure_agentdojo() {
  local venv="$1/agentdojo-python"
  ensure_stamped_venv "$venv" "pyyaml==6.0.4" "AgentDojo's task suites, 74 MB" "$AGENTDOJO_PACKAGES" || return 1
  WORLDLINE_AGENTDOJO_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_AGENTDOJO_PYTHON
}
