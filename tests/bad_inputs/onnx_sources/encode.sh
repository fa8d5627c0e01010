#!/usr/bin/env bash
# Rewrites tests/bad_inputs/NAME.onnx from each NAME.textproto here (the
# importer reads binary ModelProtos only), with protoc and ONNX's own
# onnx.proto from libonnx-dev.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for source in "$here"/*.textproto; do
  name="$(basename "$source" .textproto)"
  protoc --proto_path=/usr/include --encode=onnx.ModelProto onnx/onnx.proto \
    <"$source" >"$here/../$name.onnx"
done
