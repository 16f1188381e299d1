"""A Triton Python model that writes its own configuration.

auto_complete_config runs once when the model loads, before initialize,
and may add what config.pbtxt leaves out: here every input and output,
the largest batch and dynamic batching.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        inputs = [{"name": "VECTOR", "data_type": "TYPE_FP32", "dims": [3]}]
        outputs = [{"name": "LENGTH", "data_type": "TYPE_FP32", "dims": [1]}]
        config = auto_complete_model_config.as_dict()
        input_names = [i["name"] for i in config["input"]]
        output_names = [o["name"] for o in config["output"]]
        for i in inputs:
            if i["name"] not in input_names:
                auto_complete_model_config.add_input(i)
        for o in outputs:
            if o["name"] not in output_names:
                auto_complete_model_config.add_output(o)
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        responses = []
        for request in requests:
            v = pb_utils.get_input_tensor_by_name(request, "VECTOR").as_numpy()
            length = np.sqrt((v * v).sum(axis=1, keepdims=True)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("LENGTH", length)]))
        return responses
