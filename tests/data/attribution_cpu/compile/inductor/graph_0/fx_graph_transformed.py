class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 128, 512][65536, 512, 1]cpu", primals_2: "f32[1536][1]cpu", primals_3: "f32[1536, 512][512, 1]cpu", primals_4: "f32[512, 512][512, 1]cpu", primals_5: "f32[512][1]cpu", primals_6: "f32[512][1]cpu", primals_7: "f32[512][1]cpu", primals_8: "f32[2048, 512][512, 1]cpu", primals_9: "f32[2048][1]cpu", primals_10: "f32[512, 2048][2048, 1]cpu", primals_11: "f32[512][1]cpu", primals_12: "f32[512][1]cpu", primals_13: "f32[512][1]cpu"):
        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        view: "f32[256, 512][512, 1]cpu" = torch.ops.aten.reshape.default(primals_1, [256, 512])
        permute: "f32[512, 1536][1, 512]cpu" = torch.ops.aten.permute.default(primals_3, [1, 0]);  primals_3 = None
        addmm: "f32[256, 1536][1536, 1]cpu" = torch.ops.aten.addmm.default(primals_2, view, permute);  primals_2 = view = permute = None
        view_1: "f32[2, 128, 1536][196608, 1536, 1]cpu" = torch.ops.aten.reshape.default(addmm, [2, 128, 1536]);  addmm = None
        view_2: "f32[2, 128, 3, 512][196608, 1536, 512, 1]cpu" = torch.ops.aten.reshape.default(view_1, [2, 128, 3, 512]);  view_1 = None
        unsqueeze: "f32[1, 2, 128, 3, 512][393216, 196608, 1536, 512, 1]cpu" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        permute_1: "f32[3, 2, 128, 1, 512][512, 196608, 1536, 393216, 1]cpu" = torch.ops.aten.permute.default(unsqueeze, [3, 1, 2, 0, 4]);  unsqueeze = None
        squeeze: "f32[3, 2, 128, 512][512, 196608, 1536, 1]cpu" = torch.ops.aten.squeeze.dim(permute_1, -2);  permute_1 = None
        clone: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.clone.default(squeeze, memory_format = torch.contiguous_format);  squeeze = None
        select: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.select.int(clone, 0, 0)
        select_1: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.select.int(clone, 0, 1)
        select_2: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.select.int(clone, 0, 2);  clone = None
        view_3: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(select, [2, 1024, 64]);  select = None
        permute_2: "f32[1024, 2, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_3, [1, 0, 2]);  view_3 = None
        view_4: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(select_1, [2, 1024, 64]);  select_1 = None
        permute_3: "f32[1024, 2, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_4, [1, 0, 2]);  view_4 = None
        view_5: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(select_2, [2, 1024, 64]);  select_2 = None
        permute_4: "f32[1024, 2, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_5, [1, 0, 2]);  view_5 = None
        mul: "f32[1024, 2, 64][64, 65536, 1]cpu" = torch.ops.aten.mul.Tensor(permute_2, 0.125);  permute_2 = None
        permute_5: "f32[1024, 64, 2][64, 1, 65536]cpu" = torch.ops.aten.permute.default(permute_3, [0, 2, 1]);  permute_3 = None
        bmm: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.bmm.default(mul, permute_5)
        amax: "f32[1024, 2, 1][2, 1, 1]cpu" = torch.ops.aten.amax.default(bmm, [-1], True)
        sub: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.sub.Tensor(bmm, amax);  bmm = amax = None
        exp: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[1024, 2, 1][2, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        bmm_1: "f32[1024, 2, 64][128, 64, 1]cpu" = torch.ops.aten.bmm.default(div, permute_4)
        permute_6: "f32[2, 1024, 64][64, 128, 1]cpu" = torch.ops.aten.permute.default(bmm_1, [1, 0, 2]);  bmm_1 = None
        clone_1: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.clone.default(permute_6, memory_format = torch.contiguous_format);  permute_6 = None
        view_6: "f32[256, 512][512, 1]cpu" = torch.ops.aten.reshape.default(clone_1, [256, 512]);  clone_1 = None
        permute_7: "f32[512, 512][1, 512]cpu" = torch.ops.aten.permute.default(primals_4, [1, 0])
        addmm_1: "f32[256, 512][512, 1]cpu" = torch.ops.aten.addmm.default(primals_5, view_6, permute_7);  primals_5 = permute_7 = None
        view_7: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(addmm_1, [2, 128, 512])
        add: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(primals_1, view_7);  view_7 = None
        var_mean = torch.ops.aten.var_mean.correction(add, [2], correction = 0, keepdim = True)
        getitem: "f32[2, 128, 1][128, 1, 1]cpu" = var_mean[0]
        getitem_1: "f32[2, 128, 1][128, 1, 1]cpu" = var_mean[1];  var_mean = None
        add_1: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.add.Tensor(getitem, 1e-05);  getitem = None
        rsqrt: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.rsqrt.default(add_1);  add_1 = None
        sub_1: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(add, getitem_1);  add = None
        mul_1: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(sub_1, rsqrt);  sub_1 = None
        mul_2: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_1, primals_6);  mul_1 = None
        add_2: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(mul_2, primals_7);  mul_2 = primals_7 = None

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:25 in forward, code: x = self.norm2(x + self.ff(x))
        view_9: "f32[256, 512][512, 1]cpu" = torch.ops.aten.reshape.default(add_2, [256, 512])
        permute_8: "f32[512, 2048][1, 512]cpu" = torch.ops.aten.permute.default(primals_8, [1, 0])
        addmm_2: "f32[256, 2048][2048, 1]cpu" = torch.ops.aten.addmm.default(primals_9, view_9, permute_8);  primals_9 = permute_8 = None
        view_10: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.reshape.default(addmm_2, [2, 128, 2048])
        mul_3: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, 0.5)
        mul_4: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, 0.7071067811865476);  view_10 = None
        erf: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.erf.default(mul_4);  mul_4 = None
        add_3: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.add.Tensor(erf, 1);  erf = None
        mul_5: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(mul_3, add_3);  mul_3 = add_3 = None
        view_11: "f32[256, 2048][2048, 1]cpu" = torch.ops.aten.reshape.default(mul_5, [256, 2048]);  mul_5 = None
        permute_9: "f32[2048, 512][1, 2048]cpu" = torch.ops.aten.permute.default(primals_10, [1, 0])
        addmm_3: "f32[256, 512][512, 1]cpu" = torch.ops.aten.addmm.default(primals_11, view_11, permute_9);  primals_11 = permute_9 = None
        view_12: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(addmm_3, [2, 128, 512]);  addmm_3 = None
        add_4: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(add_2, view_12);  add_2 = view_12 = None
        var_mean_1 = torch.ops.aten.var_mean.correction(add_4, [2], correction = 0, keepdim = True)
        getitem_2: "f32[2, 128, 1][128, 1, 1]cpu" = var_mean_1[0]
        getitem_3: "f32[2, 128, 1][128, 1, 1]cpu" = var_mean_1[1];  var_mean_1 = None
        add_5: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.add.Tensor(getitem_2, 1e-05);  getitem_2 = None
        rsqrt_1: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.rsqrt.default(add_5);  add_5 = None
        sub_2: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(add_4, getitem_3);  add_4 = getitem_3 = None
        mul_6: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(sub_2, rsqrt_1);  sub_2 = None
        mul_7: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_6, primals_12)
        add_6: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(mul_7, primals_13);  mul_7 = primals_13 = None
        div_1: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.div.Tensor(rsqrt_1, 512);  rsqrt_1 = None

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        permute_24: "f32[1024, 64, 2][64, 1, 65536]cpu" = torch.ops.aten.permute.default(permute_4, [0, 2, 1]);  permute_4 = None
        permute_25: "f32[1024, 64, 2][64, 1, 65536]cpu" = torch.ops.aten.permute.default(mul, [0, 2, 1]);  mul = None
        permute_26: "f32[1024, 2, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(permute_5, [0, 2, 1]);  permute_5 = None
        return (add_6, primals_1, primals_4, primals_6, primals_8, primals_10, primals_12, div, view_6, addmm_1, getitem_1, rsqrt, view_9, addmm_2, view_11, mul_6, div_1, permute_24, permute_25, permute_26)
