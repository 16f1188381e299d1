# Placeholder until the full module lands (helper branch py-utils).
import json
import numpy as np

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2


def get_input_tensor_by_name(request, name):
    for t in request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(response, name):
    for t in response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for i in model_config.get("input", []):
        if i["name"] == name:
            return i
    return None


def get_output_config_by_name(model_config, name):
    for i in model_config.get("output", []):
        if i["name"] == name:
            return i
    return None


def using_decoupled_model_transaction_policy(model_config):
    return model_config.get("model_transaction_policy", {}).get("decoupled", False)


_S = {"TYPE_BOOL": bool, "TYPE_UINT8": np.uint8, "TYPE_INT32": np.int32, "TYPE_INT64": np.int64,
      "TYPE_FP16": np.float16, "TYPE_FP32": np.float32, "TYPE_FP64": np.float64, "TYPE_STRING": np.object_}


def triton_string_to_numpy(s):
    return _S[s]


class ModelConfig:
    def __init__(self, model_config):
        self._model_config = json.loads(model_config)

    def as_dict(self):
        return self._model_config

    def set_max_batch_size(self, n):
        self._model_config["max_batch_size"] = n

    def add_input(self, d):
        self._model_config.setdefault("input", []).append(d)

    def add_output(self, d):
        self._model_config.setdefault("output", []).append(d)

    def set_dynamic_batching(self):
        self._model_config.setdefault("dynamic_batching", {})
