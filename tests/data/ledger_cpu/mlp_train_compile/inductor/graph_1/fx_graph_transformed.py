class GraphModule(torch.nn.Module):
    def forward(self, primals_4: "f32[1024, 1024][1024, 1]cpu", primals_6: "f32[1024, 1][1, 1]cpu", relu: "f32[4, 1024][1024, 1]cpu", relu_1: "f32[4, 1024][1024, 1]cpu", permute_4: "f32[1, 4][1, 1]cpu", tangents_1: "f32[4, 1][1, 1]cpu"):
        # File: /work/main/fusionlab/experiments/models/mlp.py:27 in forward, code: x = x @ self.w3 + self.b3
        sum_1: "f32[1, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True)
        view: "f32[1][1]cpu" = torch.ops.aten.reshape.default(sum_1, [1]);  sum_1 = None
        permute: "f32[1024, 4][1, 1024]cpu" = torch.ops.aten.permute.default(relu_1, [1, 0])
        mm_3: "f32[1024, 1][1, 1]cpu" = torch.ops.aten.mm.default(permute, tangents_1);  permute = None
        permute_1: "f32[1, 1024][1, 1]cpu" = torch.ops.aten.permute.default(primals_6, [1, 0]);  primals_6 = None
        mm_4: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.mm.default(tangents_1, permute_1);  tangents_1 = permute_1 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:26 in forward, code: x = torch.relu(x)
        le: "b8[4, 1024][1024, 1]cpu" = torch.ops.aten.le.Scalar(relu_1, 0);  relu_1 = None
        full_default: "f32[][]cpu" = torch.ops.aten.full.default([], 0.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
        where: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.where.self(le, full_default, mm_4);  le = mm_4 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:25 in forward, code: x = x @ self.w2 + self.b2
        sum_2: "f32[1, 1024][1024, 1]cpu" = torch.ops.aten.sum.dim_IntList(where, [0], True)
        view_1: "f32[1024][1]cpu" = torch.ops.aten.reshape.default(sum_2, [1024]);  sum_2 = None
        permute_2: "f32[1024, 4][1, 1024]cpu" = torch.ops.aten.permute.default(relu, [1, 0])
        mm_5: "f32[1024, 1024][1024, 1]cpu" = torch.ops.aten.mm.default(permute_2, where);  permute_2 = None
        permute_3: "f32[1024, 1024][1, 1024]cpu" = torch.ops.aten.permute.default(primals_4, [1, 0]);  primals_4 = None
        mm_6: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.mm.default(where, permute_3);  where = permute_3 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:24 in forward, code: x = torch.relu(x)
        le_1: "b8[4, 1024][1024, 1]cpu" = torch.ops.aten.le.Scalar(relu, 0);  relu = None
        where_1: "f32[4, 1024][1024, 1]cpu" = torch.ops.aten.where.self(le_1, full_default, mm_6);  le_1 = full_default = mm_6 = None

        # File: /work/main/fusionlab/experiments/models/mlp.py:23 in forward, code: x = x @ self.w1 + self.b1
        sum_3: "f32[1, 1024][1024, 1]cpu" = torch.ops.aten.sum.dim_IntList(where_1, [0], True)
        view_2: "f32[1024][1]cpu" = torch.ops.aten.reshape.default(sum_3, [1024]);  sum_3 = None
        mm_7: "f32[1, 1024][1024, 1]cpu" = torch.ops.aten.mm.default(permute_4, where_1);  permute_4 = where_1 = None
        return (mm_7, None, view_2, mm_5, view_1, mm_3, view)
