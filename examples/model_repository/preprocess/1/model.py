"""A WordPiece tokenizer as a Triton Python model.

TEXT (BYTES, one UTF-8 string per batch item) becomes INPUT_IDS and
ATTENTION_MASK (INT64, max_length each, from the config's parameters). The
text is lower-cased and split into words (runs of letters, digits and _)
and punctuation (any other non-space character, one token each); each word
is cut greedily into the longest pieces of the vocabulary, pieces after the
first spelled with a leading "##", and a word with no such cut is [UNK].
"""

import json
import os
import re

import numpy as np
import triton_python_backend_utils as pb_utils

WORDS = re.compile(r"\w+|[^\w\s]")
MAX_CHARS_PER_WORD = 100


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.max_length = int(config["parameters"]["max_length"]["string_value"])
        if self.max_length < 2:
            raise pb_utils.TritonModelException("max_length must be at least 2 ([CLS] and [SEP])")
        with open(os.path.join(args["model_repository"], "vocab.txt"), encoding="utf-8") as f:
            self.vocab = {tok: i for i, tok in enumerate(f.read().splitlines())}
        self.pad, self.unk = self.vocab["[PAD]"], self.vocab["[UNK]"]
        self.cls, self.sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        pb_utils.Logger.log_info("preprocess: %d tokens, max_length %d" % (len(self.vocab), self.max_length))

    def wordpiece(self, word):
        if len(word) > MAX_CHARS_PER_WORD:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                return [self.unk]
            start = end
        return ids

    def encode(self, text):
        ids = []
        for word in WORDS.findall(text.lower()):
            ids += self.wordpiece(word)
        ids = [self.cls] + ids[: self.max_length - 2] + [self.sep]
        mask = [1] * len(ids) + [0] * (self.max_length - len(ids))
        return ids + [self.pad] * (self.max_length - len(ids)), mask

    def execute(self, requests):
        responses = []
        for request in requests:
            texts = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy().reshape(-1)
            ids = np.zeros((len(texts), self.max_length), dtype=np.int64)
            mask = np.zeros((len(texts), self.max_length), dtype=np.int64)
            for i, t in enumerate(texts):
                ids[i], mask[i] = self.encode(t.decode("utf-8", errors="replace"))
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("INPUT_IDS", ids),
                pb_utils.Tensor("ATTENTION_MASK", mask),
            ]))
        return responses
