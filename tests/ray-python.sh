# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned `ray` package, which the test of the Ray
# recipe (contrib/ray/worldline_ray.py) starts a local multi-node cluster
# with (host/tests/ray_recipe.rs). Ray's minimal install: no dashboard,
# no `ray[default]` extras; what `import ray`, `ray.init` and
# `ray.cluster_utils` import, pinned (the closure of ray's own declared
# dependencies), then ray itself without resolving them again (266 MB).
# Installed once and found again by later runs (a stamp names what it
# holds). Exports WORLDLINE_RAY_PYTHON, its interpreter.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
RAY_PYTHON_DEPS="attrs==26.1.0 certifi==2026.10.19.post1 charset-normalizer==3.5.3 click==8.5.1 \
filelock==4.3.1 idna==3.20 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 msgpack==1.2.4 \
packaging==26.4 protobuf==7.36.2 PyYAML==6.0.4 referencing==0.37.0 requests==2.34.2 \
rpds-py==2026.9.1 typing_extensions==4.16.0 urllib3==2.8.0"
RAY_PYTHON_PACKAGE="ray==2.60.0"

ensure_ray_python() {
  local venv="$1/ray-python"
  ensure_stamped_venv "$venv" "$RAY_PYTHON_DEPS" "the Ray recipe's test" "$RAY_PYTHON_PACKAGE" || return 1
  WORLDLINE_RAY_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_RAY_PYTHON
}
