"""Class logits to a label and its probability, as a Triton Python model."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.labels = config["parameters"]["labels"]["string_value"].split(",")
        dims = pb_utils.get_input_config_by_name(config, "LOGITS")["dims"]
        if [int(d) for d in dims] != [len(self.labels)]:
            raise pb_utils.TritonModelException(
                "LOGITS has dims %s but there are %d labels" % (dims, len(self.labels)))

    def execute(self, requests):
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "LOGITS").as_numpy()
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs = e / e.sum(axis=1, keepdims=True)
            best = probs.argmax(axis=1)
            labels = np.array([[self.labels[i].encode()] for i in best], dtype=np.object_)
            scores = probs[np.arange(len(best)), best].reshape(-1, 1).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("LABEL", labels),
                pb_utils.Tensor("SCORE", scores),
            ]))
        return responses
