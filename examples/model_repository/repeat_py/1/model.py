"""Triton's repeat example as a decoupled Python model.

execute hands each request to a thread of its own and returns None: the
thread sends one response per element of IN through the request's response
sender, each DELAY[i] ms after the previous one, then the final flag. A
cancelled request stops early, with the final flag.
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException(
                "repeat_py needs model_transaction_policy { decoupled: true } in its config")
        self.lock = threading.Lock()
        self.threads = set()

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy()
            delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy().copy()
            wait = pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy()[0]
            if len(delays) != len(values):
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    "DELAY has %d elements, IN %d: they must match" % (len(delays), len(values)),
                    pb_utils.TritonError.INVALID_ARG)),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            thread = threading.Thread(target=self.respond, args=(sender, values, delays), daemon=True)
            with self.lock:
                self.threads.add(thread)
            thread.start()
            time.sleep(wait / 1000)
        return None

    def respond(self, sender, values, delays):
        try:
            for i, (value, delay) in enumerate(zip(values, delays)):
                time.sleep(delay / 1000)
                if sender.is_cancelled():
                    break
                sender.send(pb_utils.InferenceResponse(output_tensors=[
                    pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                    pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32)),
                ]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        finally:
            with self.lock:
                self.threads.discard(threading.current_thread())

    def finalize(self):
        with self.lock:
            threads = list(self.threads)
        for t in threads:
            t.join()
