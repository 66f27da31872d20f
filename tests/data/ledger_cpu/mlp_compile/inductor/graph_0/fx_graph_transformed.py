class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[1, 1024][1024, 1]cpu", arg1_1: "f32[4, 1][1, 1]cpu", arg2_1: "f32[1024][1]cpu", arg3_1: "f32[1024, 1024][1024, 1]cpu", arg4_1: "f32[1024][1]cpu", arg5_1: "f32[1024, 1][1, 1]cpu", arg6_1: "f32[1][1]cpu"):
        # File: /work/main/fusionlab/experiments/models/mlp.py:23 in forward, code: x = x @ self.w1 + self.b1
        addmm_default_2: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.addmm.default(arg2_1, arg1_1, arg0_1);  arg2_1 = arg1_1 = arg0_1 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:24 in forward, code: x = torch.relu(x)
        relu: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.relu.default(addmm_default_2);  addmm_default_2 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:25 in forward, code: x = x @ self.w2 + self.b2
        addmm_default_1: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.addmm.default(arg4_1, relu, arg3_1);  arg4_1 = relu = arg3_1 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:26 in forward, code: x = torch.relu(x)
        relu_1: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.relu.default(addmm_default_1);  addmm_default_1 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:27 in forward, code: x = x @ self.w3 + self.b3
        addmm_default: "f32[4, 1][1, 1]cpu" = torch.ops.aten.addmm.default(arg6_1, relu_1, arg5_1);  arg6_1 = relu_1 = arg5_1 = None
        return (addmm_default,)
