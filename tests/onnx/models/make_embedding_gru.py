"""Writes embedding_gru.onnx: a small language model as users export one,
nn.Embedding -> 2-layer nn.GRU -> nn.Linear through torch.onnx.export (the
TorchScript exporter, opset 17), whose token ids are the graph's input; and
beside it the ids it was run on and PyTorch's logits for them
(embedding_gru.ids.bin, int64 [2, 7]; embedding_gru.logits.bin, float32
[2, 7, 20]; raw little-endian), which //tests/onnx:onnx_end_to_end_test
compares loom with.

Run with the peers' virtual environment (tests/bench/peers/setup_venv.sh):
  ~/.venvs/loom-peers/bin/python tests/onnx/models/make_embedding_gru.py
The tests read the files; they need no torch.
"""
import contextlib
import os
import sys
import warnings

import torch

VOCAB, EMBED, HIDDEN, LAYERS, BATCH, SEQ = 20, 8, 16, 2, 2, 7


class LanguageModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCAB, EMBED)
        self.gru = torch.nn.GRU(EMBED, HIDDEN, num_layers=LAYERS, batch_first=True)
        self.head = torch.nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        hidden, _ = self.gru(self.embedding(ids))
        return self.head(hidden)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(19)
    model = LanguageModel().eval()
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int64)
    ids[0, 0], ids[1, -1] = 0, VOCAB - 1  # the table's first and last rows
    with torch.no_grad():
        logits = model(ids)
    path = os.path.join(here, "embedding_gru.onnx")
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), path, dynamo=False, opset_version=17,
                          input_names=["ids"], output_names=["logits"])
    ids.numpy().astype("<i8").tofile(os.path.join(here, "embedding_gru.ids.bin"))
    logits.numpy().astype("<f4").tofile(os.path.join(here, "embedding_gru.logits.bin"))


if __name__ == "__main__":
    main()
