"""Detect, then classify only what was detected: Triton's BLS pattern.

For each request (a batch of flattened 4x4 images) the model asks the
detector for a score per image; the images scoring above the threshold go
to the classifier in one request, the others are answered "none" without
it. Errors of either model become the request's error.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


def call(model, output, inputs):
    """Runs model on inputs (pb_utils.Tensor list) and returns output as numpy."""
    response = pb_utils.InferenceRequest(
        model_name=model, inputs=inputs, requested_output_names=[output]).exec()
    if response.has_error():
        raise pb_utils.TritonModelException(response.error().message())
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"])["parameters"]
        self.threshold = float(params["threshold"]["string_value"])
        self.classes = params["classes"]["string_value"].split(",")

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(self.answer(pb_utils.get_input_tensor_by_name(request, "INPUT")))
            except pb_utils.TritonModelException as e:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))))
        return responses

    def answer(self, images):
        scores = call("detector", "SCORE", [images]).reshape(-1)
        names = np.array([[b"none"]] * len(scores), dtype=np.object_)
        found = np.nonzero(scores > self.threshold)[0]
        if len(found) > 0:
            crops = images.as_numpy()[found]
            probs = call("classifier", "PROBS", [pb_utils.Tensor("INPUT", crops)])
            for row, best in zip(found, probs.argmax(axis=1)):
                names[row, 0] = self.classes[best].encode()
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("CLASS", names),
            pb_utils.Tensor("SCORE", scores.reshape(-1, 1).astype(np.float32)),
        ])
