# OUT = IN + the sum of 0..iterations-1, summed in a pure-Python loop: work
# that holds the GIL for its whole length (a few ms per request), so only
# instances in their own processes run it in parallel.
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.iterations = int(params["iterations"]["string_value"])

    def execute(self, requests):
        responses = []
        for request in requests:
            x = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            s = 0
            for i in range(self.iterations):
                s += i
            out = pb_utils.Tensor("OUT", np.array([x + s], dtype=np.int64))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
