class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[1, 1024][1024, 1]cpu", primals_2: "f32[4, 1][1, 1]cpu", primals_3: "f32[1024][1]cpu", primals_4: "f32[1024, 1024][1024, 1]cpu", primals_5: "f32[1024][1]cpu", primals_6: "f32[1024, 1][1, 1]cpu", primals_7: "f32[1][1]cpu"):
        # File: /work/main/fusionlab/experiments/models/mlp.py:23 in forward, code: x = x @ self.w1 + self.b1
        addmm_default_2: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.addmm.default(primals_3, primals_2, primals_1);  primals_3 = primals_1 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:24 in forward, code: x = torch.relu(x)
        relu: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.relu.default(addmm_default_2);  addmm_default_2 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:25 in forward, code: x = x @ self.w2 + self.b2
        addmm_default_1: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.addmm.default(primals_5, relu, primals_4);  primals_5 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:26 in forward, code: x = torch.relu(x)
        relu_1: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.relu.default(addmm_default_1);  addmm_default_1 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:27 in forward, code: x = x @ self.w3 + self.b3
        addmm_default: "f32[4, 1][1, 1]cpu" = torch.ops.aten.addmm.default(primals_7, relu_1, primals_6);  primals_7 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:23 in forward, code: x = x @ self.w1 + self.b1
        permute_4: "f32[1, 4][1, 1]cpu" = torch.ops.aten.permute.default(primals_2, [1, 0]);  primals_2 = None
        return (addmm_default, primals_4, primals_6, relu, relu_1, permute_4)
