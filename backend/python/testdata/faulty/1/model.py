# A model that fails on command, for the fault tests: CMD 0 answers the
# stub's process id, 1 kills the stub (SIGKILL), 2 crashes it (a
# segmentation fault), 3 never returns (a busy loop), 4 exits the
# interpreter.
import ctypes
import os
import signal

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            cmd = int(pb_utils.get_input_tensor_by_name(request, "CMD").as_numpy()[0])
            if cmd == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            elif cmd == 2:
                ctypes.string_at(0)
            elif cmd == 3:
                while True:
                    pass
            elif cmd == 4:
                os._exit(3)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))]))
        return responses
