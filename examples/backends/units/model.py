# A Python-based backend, laid out as Triton's: this model.py, in
# <backend-directory>/units/, serves every model whose config says
# backend: "units". Each such model converts a unit to another,
# OUT = IN * scale + offset, with scale and offset from its own config's
# parameters; the model folders hold no code.
import json

import numpy as np
import triton_python_backend_utils as pb_utils

from conversion import linear


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        # Every model of this backend has the same tensors; a model's
        # config.pbtxt needs only the backend and its parameters.
        config.add_input({"name": "IN", "data_type": "TYPE_FP64", "dims": [-1]})
        config.add_output({"name": "OUT", "data_type": "TYPE_FP64", "dims": [-1]})
        config.set_max_batch_size(8)
        config.set_dynamic_batching()
        return config

    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        try:
            self.scale = float(params["scale"]["string_value"])
            self.offset = float(params.get("offset", {"string_value": "0"})["string_value"])
        except (KeyError, ValueError) as e:
            raise pb_utils.TritonModelException(
                "model '%s' of the units backend needs numeric parameters scale and offset: %s"
                % (args["model_name"], e))

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out = pb_utils.Tensor("OUT", linear(x, self.scale, self.offset).astype(np.float64))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
