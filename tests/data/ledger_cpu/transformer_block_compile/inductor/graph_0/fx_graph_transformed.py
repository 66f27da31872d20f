class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 128, 512][65536, 512, 1]cpu", arg1_1: "f32[1536][1]cpu", arg2_1: "f32[1536, 512][512, 1]cpu", arg3_1: "f32[512, 512][512, 1]cpu", arg4_1: "f32[512][1]cpu", arg5_1: "f32[512][1]cpu", arg6_1: "f32[512][1]cpu", arg7_1: "f32[2048, 512][512, 1]cpu", arg8_1: "f32[2048][1]cpu", arg9_1: "f32[512, 2048][2048, 1]cpu", arg10_1: "f32[512][1]cpu", arg11_1: "f32[512][1]cpu", arg12_1: "f32[512][1]cpu"):
        # File: /work/main/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        view: "f32[512, 512][512, 1]cpu" = torch.ops.aten.reshape.default(arg0_1, [512, 512])
        permute: "f32[512, 1536][1, 512]cpu" = torch.ops.aten.permute.default(arg2_1, [1, 0]);  arg2_1 = None
        addmm: "f32[512, 1536][1536, 1]cpu" = torch.ops.aten.addmm.default(arg1_1, view, permute);  arg1_1 = view = permute = None
        view_1: "f32[4, 128, 1536][196608, 1536, 1]cpu" = torch.ops.aten.reshape.default(addmm, [4, 128, 1536]);  addmm = None
        view_2: "f32[4, 128, 3, 512][196608, 1536, 512, 1]cpu" = torch.ops.aten.reshape.default(view_1, [4, 128, 3, 512]);  view_1 = None
        unsqueeze: "f32[1, 4, 128, 3, 512][786432, 196608, 1536, 512, 1]cpu" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        permute_1: "f32[3, 4, 128, 1, 512][512, 196608, 1536, 786432, 1]cpu" = torch.ops.aten.permute.default(unsqueeze, [3, 1, 2, 0, 4]);  unsqueeze = None
        squeeze: "f32[3, 4, 128, 512][512, 196608, 1536, 1]cpu" = torch.ops.aten.squeeze.dim(permute_1, -2);  permute_1 = None
        clone: "f32[3, 4, 128, 512][262144, 65536, 512, 1]cpu" = torch.ops.aten.clone.default(squeeze, memory_format = torch.contiguous_format);  squeeze = None
        select: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.select.int(clone, 0, 0)
        view_3: "f32[4, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(select, [4, 1024, 64]);  select = None
        permute_2: "f32[1024, 4, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_3, [1, 0, 2]);  view_3 = None
        mul: "f32[1024, 4, 64][64, 65536, 1]cpu" = torch.ops.aten.mul.Tensor(permute_2, 0.125);  permute_2 = None

        # No stacktrace found for following nodes
        unsqueeze_default: "f32[1, 1024, 4, 64][65536, 64, 65536, 1]cpu" = torch.ops.aten.unsqueeze.default(mul, 0);  mul = None

        # File: /work/main/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        select_1: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.select.int(clone, 0, 1)
        view_4: "f32[4, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(select_1, [4, 1024, 64]);  select_1 = None
        permute_3: "f32[1024, 4, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_4, [1, 0, 2]);  view_4 = None

        # No stacktrace found for following nodes
        unsqueeze_default_1: "f32[1, 1024, 4, 64][65536, 64, 65536, 1]cpu" = torch.ops.aten.unsqueeze.default(permute_3, 0);  permute_3 = None

        # File: /work/main/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        select_2: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.select.int(clone, 0, 2);  clone = None
        view_5: "f32[4, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(select_2, [4, 1024, 64]);  select_2 = None
        permute_4: "f32[1024, 4, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_5, [1, 0, 2]);  view_5 = None

        # No stacktrace found for following nodes
        unsqueeze_default_2: "f32[1, 1024, 4, 64][65536, 64, 65536, 1]cpu" = torch.ops.aten.unsqueeze.default(permute_4, 0);  permute_4 = None
        _scaled_dot_product_flash_attention_for_cpu_default = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, scale = 1.0);  unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = None
        getitem_4: "f32[1, 1024, 4, 64][65536, 64, 65536, 1]cpu" = _scaled_dot_product_flash_attention_for_cpu_default[0];  _scaled_dot_product_flash_attention_for_cpu_default = None

        # File: /work/main/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        squeeze_dim: "f32[1024, 4, 64][64, 65536, 1]cpu" = torch.ops.aten.squeeze.dim(getitem_4, 0);  getitem_4 = None
        permute_6: "f32[4, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.permute.default(squeeze_dim, [1, 0, 2]);  squeeze_dim = None
        view_6: "f32[512, 512][512, 1]cpu" = torch.ops.aten.reshape.default(permute_6, [512, 512]);  permute_6 = None
        permute_7: "f32[512, 512][1, 512]cpu" = torch.ops.aten.permute.default(arg3_1, [1, 0]);  arg3_1 = None
        addmm_1: "f32[512, 512][512, 1]cpu" = torch.ops.aten.addmm.default(arg4_1, view_6, permute_7);  arg4_1 = view_6 = permute_7 = None
        view_7: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(addmm_1, [4, 128, 512]);  addmm_1 = None
        add: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(arg0_1, view_7);  arg0_1 = view_7 = None
        var_mean = torch.ops.aten.var_mean.correction(add, [2], correction = 0, keepdim = True)
        getitem: "f32[4, 128, 1][128, 1, 1]cpu" = var_mean[0]
        getitem_1: "f32[4, 128, 1][128, 1, 1]cpu" = var_mean[1];  var_mean = None
        sub_1: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(add, getitem_1);  add = getitem_1 = None
        add_1: "f32[4, 128, 1][128, 1, 1]cpu" = torch.ops.aten.add.Tensor(getitem, 1e-05);  getitem = None
        rsqrt: "f32[4, 128, 1][128, 1, 1]cpu" = torch.ops.aten.rsqrt.default(add_1);  add_1 = None
        mul_1: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(sub_1, rsqrt);  sub_1 = rsqrt = None
        mul_2: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_1, arg5_1);  mul_1 = arg5_1 = None
        add_2: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(mul_2, arg6_1);  mul_2 = arg6_1 = None

        # File: /work/main/fusionlab/experiments/models/transformer_block.py:25 in forward, code: x = self.norm2(x + self.ff(x))
        view_9: "f32[512, 512][512, 1]cpu" = torch.ops.aten.reshape.default(add_2, [512, 512])
        permute_8: "f32[512, 2048][1, 512]cpu" = torch.ops.aten.permute.default(arg7_1, [1, 0]);  arg7_1 = None
        addmm_2: "f32[512, 2048][2048, 1]cpu" = torch.ops.aten.addmm.default(arg8_1, view_9, permute_8);  arg8_1 = view_9 = permute_8 = None
        view_10: "f32[4, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.reshape.default(addmm_2, [4, 128, 2048]);  addmm_2 = None
        mul_3: "f32[4, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, 0.5)
        mul_4: "f32[4, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, 0.7071067811865476);  view_10 = None
        erf: "f32[4, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.erf.default(mul_4);  mul_4 = None
        add_3: "f32[4, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.add.Tensor(erf, 1);  erf = None
        mul_5: "f32[4, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(mul_3, add_3);  mul_3 = add_3 = None
        view_11: "f32[512, 2048][2048, 1]cpu" = torch.ops.aten.reshape.default(mul_5, [512, 2048]);  mul_5 = None
        permute_9: "f32[2048, 512][1, 2048]cpu" = torch.ops.aten.permute.default(arg9_1, [1, 0]);  arg9_1 = None
        addmm_3: "f32[512, 512][512, 1]cpu" = torch.ops.aten.addmm.default(arg10_1, view_11, permute_9);  arg10_1 = view_11 = permute_9 = None
        view_12: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(addmm_3, [4, 128, 512]);  addmm_3 = None
        add_4: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(add_2, view_12);  add_2 = view_12 = None
        var_mean_1 = torch.ops.aten.var_mean.correction(add_4, [2], correction = 0, keepdim = True)
        getitem_2: "f32[4, 128, 1][128, 1, 1]cpu" = var_mean_1[0]
        getitem_3: "f32[4, 128, 1][128, 1, 1]cpu" = var_mean_1[1];  var_mean_1 = None
        sub_2: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(add_4, getitem_3);  add_4 = getitem_3 = None
        add_5: "f32[4, 128, 1][128, 1, 1]cpu" = torch.ops.aten.add.Tensor(getitem_2, 1e-05);  getitem_2 = None
        rsqrt_1: "f32[4, 128, 1][128, 1, 1]cpu" = torch.ops.aten.rsqrt.default(add_5);  add_5 = None
        mul_6: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(sub_2, rsqrt_1);  sub_2 = rsqrt_1 = None
        mul_7: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_6, arg11_1);  mul_6 = arg11_1 = None
        add_6: "f32[4, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(mul_7, arg12_1);  mul_7 = arg12_1 = None
        return (add_6,)
