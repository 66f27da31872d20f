class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[64, 64]"):
        # No stacktrace found for following nodes
        sin: "f32[64, 64]" = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None
        mul: "f32[64, 64]" = torch.ops.aten.mul.Tensor(sin, 2);  sin = None
        add: "f32[64, 64]" = torch.ops.aten.add.Tensor(mul, 1);  mul = None
        relu: "f32[64, 64]" = torch.ops.aten.relu.default(add);  add = None
        sum_1: "f32[64]" = torch.ops.aten.sum.dim_IntList(relu, [1]);  relu = None
        return (sum_1,)
