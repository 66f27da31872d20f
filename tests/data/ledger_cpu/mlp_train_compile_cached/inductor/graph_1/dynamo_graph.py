class GraphModule(torch.nn.Module):
    def forward(self, L_self_parameters_w1_: "f32[1, 1024][1024, 1]cpu", L_x_: "f32[4, 1][1, 1]cpu", L_self_parameters_b1_: "f32[1024][1]cpu", L_self_parameters_w2_: "f32[1024, 1024][1024, 1]cpu", L_self_parameters_b2_: "f32[1024][1]cpu", L_self_parameters_w3_: "f32[1024, 1][1, 1]cpu", L_self_parameters_b3_: "f32[1][1]cpu"):
        l_self_parameters_w1_ = L_self_parameters_w1_
        l_x_ = L_x_
        l_self_parameters_b1_ = L_self_parameters_b1_
        l_self_parameters_w2_ = L_self_parameters_w2_
        l_self_parameters_b2_ = L_self_parameters_b2_
        l_self_parameters_w3_ = L_self_parameters_w3_
        l_self_parameters_b3_ = L_self_parameters_b3_

        # File: /work/main/fusionlab/experiments/models/mlp.py:23 in forward, code: x = x @ self.w1 + self.b1
        matmul: "f32[4, 1024][1024, 1]cpu" = l_x_ @ l_self_parameters_w1_;  l_x_ = l_self_parameters_w1_ = None
        x: "f32[4, 1024][1024, 1]cpu" = matmul + l_self_parameters_b1_;  matmul = l_self_parameters_b1_ = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:24 in forward, code: x = torch.relu(x)
        x_1: "f32[4, 1024][1024, 1]cpu" = torch.relu(x);  x = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:25 in forward, code: x = x @ self.w2 + self.b2
        matmul_1: "f32[4, 1024][1024, 1]cpu" = x_1 @ l_self_parameters_w2_;  x_1 = l_self_parameters_w2_ = None
        x_2: "f32[4, 1024][1024, 1]cpu" = matmul_1 + l_self_parameters_b2_;  matmul_1 = l_self_parameters_b2_ = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:26 in forward, code: x = torch.relu(x)
        x_3: "f32[4, 1024][1024, 1]cpu" = torch.relu(x_2);  x_2 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:27 in forward, code: x = x @ self.w3 + self.b3
        matmul_2: "f32[4, 1][1, 1]cpu" = x_3 @ l_self_parameters_w3_;  x_3 = l_self_parameters_w3_ = None
        x_4: "f32[4, 1][1, 1]cpu" = matmul_2 + l_self_parameters_b3_;  matmul_2 = l_self_parameters_b3_ = None
        return (x_4,)
