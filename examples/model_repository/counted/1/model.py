"""A Triton Python model that keeps custom metrics of its own."""

import numpy as np
import triton_python_backend_utils as pb_utils

SIZE_BUCKETS = [1.0, 4.0, 16.0, 64.0, 256.0]


class TritonPythonModel:
    def initialize(self, args):
        labels = {"model": args["model_name"], "version": args["model_version"]}
        self.requests_family = pb_utils.MetricFamily(
            name="counted_requests_total",
            description="Requests the counted model answered",
            kind=pb_utils.MetricFamily.COUNTER)
        self.last_size_family = pb_utils.MetricFamily(
            name="counted_last_size",
            description="Elements of the last request's INPUT",
            kind=pb_utils.MetricFamily.GAUGE)
        self.size_family = pb_utils.MetricFamily(
            name="counted_input_size",
            description="Elements of INPUT per request",
            kind=pb_utils.MetricFamily.HISTOGRAM)
        self.requests = self.requests_family.Metric(labels=labels)
        self.last_size = self.last_size_family.Metric(labels=labels)
        self.size = self.size_family.Metric(labels=labels, buckets=SIZE_BUCKETS)

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            self.requests.increment(1)
            self.last_size.set(x.size)
            self.size.observe(x.size)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("SUM", np.array([x.sum()], dtype=np.float32)),
                pb_utils.Tensor("REQUESTS", np.array([self.requests.value()], dtype=np.float64)),
            ]))
        return responses

    def finalize(self):
        # Metrics before their families (Triton's rule for MetricFamily).
        del self.requests, self.last_size, self.size
        del self.requests_family, self.last_size_family, self.size_family
