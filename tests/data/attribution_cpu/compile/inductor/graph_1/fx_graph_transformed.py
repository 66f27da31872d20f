class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 128, 512][65536, 512, 1]cpu", primals_4: "f32[512, 512][512, 1]cpu", primals_6: "f32[512][1]cpu", primals_8: "f32[2048, 512][512, 1]cpu", primals_10: "f32[512, 2048][2048, 1]cpu", primals_12: "f32[512][1]cpu", div: "f32[1024, 2, 2][4, 2, 1]cpu", view_6: "f32[256, 512][512, 1]cpu", addmm_1: "f32[256, 512][512, 1]cpu", getitem_1: "f32[2, 128, 1][128, 1, 1]cpu", rsqrt: "f32[2, 128, 1][128, 1, 1]cpu", view_9: "f32[256, 512][512, 1]cpu", addmm_2: "f32[256, 2048][2048, 1]cpu", view_11: "f32[256, 2048][2048, 1]cpu", mul_6: "f32[2, 128, 512][65536, 512, 1]cpu", div_1: "f32[2, 128, 1][128, 1, 1]cpu", permute_24: "f32[1024, 64, 2][64, 1, 65536]cpu", permute_25: "f32[1024, 64, 2][64, 1, 65536]cpu", permute_26: "f32[1024, 2, 64][64, 65536, 1]cpu", tangents_1: "f32[2, 128, 512][65536, 512, 1]cpu"):
        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:25 in forward, code: x = self.norm2(x + self.ff(x))
        mul_9: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, primals_12);  primals_12 = None
        mul_10: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_9, 512)
        sum_2: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(mul_9, [2], True)
        mul_11: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_9, mul_6);  mul_9 = None
        sum_3: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(mul_11, [2], True);  mul_11 = None
        mul_12: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_6, sum_3);  sum_3 = None
        sub_4: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(mul_10, sum_2);  mul_10 = sum_2 = None
        sub_5: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(sub_4, mul_12);  sub_4 = mul_12 = None
        mul_13: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(div_1, sub_5);  div_1 = sub_5 = None
        mul_14: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, mul_6);  mul_6 = None
        sum_4: "f32[512][1]cpu" = torch.ops.aten.sum.dim_IntList(mul_14, [0, 1]);  mul_14 = None
        sum_5: "f32[512][1]cpu" = torch.ops.aten.sum.dim_IntList(tangents_1, [0, 1]);  tangents_1 = None
        view_13: "f32[256, 512][512, 1]cpu" = torch.ops.aten.reshape.default(mul_13, [256, 512])
        permute_9: "f32[2048, 512][1, 2048]cpu" = torch.ops.aten.permute.default(primals_10, [1, 0]);  primals_10 = None
        permute_10: "f32[512, 2048][2048, 1]cpu" = torch.ops.aten.permute.default(permute_9, [1, 0]);  permute_9 = None
        mm: "f32[256, 2048][2048, 1]cpu" = torch.ops.aten.mm.default(view_13, permute_10);  permute_10 = None
        permute_11: "f32[512, 256][1, 512]cpu" = torch.ops.aten.permute.default(view_13, [1, 0])
        mm_1: "f32[512, 2048][2048, 1]cpu" = torch.ops.aten.mm.default(permute_11, view_11);  permute_11 = view_11 = None
        sum_6: "f32[1, 512][512, 1]cpu" = torch.ops.aten.sum.dim_IntList(view_13, [0], True);  view_13 = None
        view_14: "f32[512][1]cpu" = torch.ops.aten.reshape.default(sum_6, [512]);  sum_6 = None
        view_15: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.reshape.default(mm, [2, 128, 2048]);  mm = None
        view_10: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.reshape.default(addmm_2, [2, 128, 2048]);  addmm_2 = None
        mul_4: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, 0.7071067811865476)
        erf: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.erf.default(mul_4);  mul_4 = None
        add_3: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.add.Tensor(erf, 1);  erf = None
        mul_16: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(add_3, 0.5);  add_3 = None
        mul_17: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, view_10)
        mul_18: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(mul_17, -0.5);  mul_17 = None
        exp_1: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.exp.default(mul_18);  mul_18 = None
        mul_19: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(exp_1, 0.3989422804014327);  exp_1 = None
        mul_20: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_10, mul_19);  view_10 = mul_19 = None
        add_8: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.add.Tensor(mul_16, mul_20);  mul_16 = mul_20 = None
        mul_21: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch.ops.aten.mul.Tensor(view_15, add_8);  view_15 = add_8 = None
        view_16: "f32[256, 2048][2048, 1]cpu" = torch.ops.aten.reshape.default(mul_21, [256, 2048]);  mul_21 = None
        permute_8: "f32[512, 2048][1, 512]cpu" = torch.ops.aten.permute.default(primals_8, [1, 0]);  primals_8 = None
        permute_14: "f32[2048, 512][512, 1]cpu" = torch.ops.aten.permute.default(permute_8, [1, 0]);  permute_8 = None
        mm_2: "f32[256, 512][512, 1]cpu" = torch.ops.aten.mm.default(view_16, permute_14);  permute_14 = None
        permute_15: "f32[2048, 256][1, 2048]cpu" = torch.ops.aten.permute.default(view_16, [1, 0])
        mm_3: "f32[2048, 512][512, 1]cpu" = torch.ops.aten.mm.default(permute_15, view_9);  permute_15 = view_9 = None
        sum_7: "f32[1, 2048][2048, 1]cpu" = torch.ops.aten.sum.dim_IntList(view_16, [0], True);  view_16 = None
        view_17: "f32[2048][1]cpu" = torch.ops.aten.reshape.default(sum_7, [2048]);  sum_7 = None
        view_18: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(mm_2, [2, 128, 512]);  mm_2 = None
        add_9: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(mul_13, view_18);  mul_13 = view_18 = None

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        mul_23: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(add_9, primals_6);  primals_6 = None
        mul_24: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_23, 512)
        sum_8: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(mul_23, [2], True)
        view_7: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(addmm_1, [2, 128, 512]);  addmm_1 = None
        add: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(primals_1, view_7);  view_7 = None
        sub_1: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(add, getitem_1);  add = getitem_1 = None
        mul_1: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(sub_1, rsqrt);  sub_1 = None
        mul_25: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_23, mul_1);  mul_23 = None
        sum_9: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(mul_25, [2], True);  mul_25 = None
        mul_26: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(mul_1, sum_9);  sum_9 = None
        sub_7: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(mul_24, sum_8);  mul_24 = sum_8 = None
        sub_8: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.sub.Tensor(sub_7, mul_26);  sub_7 = mul_26 = None
        div_2: "f32[2, 128, 1][128, 1, 1]cpu" = torch.ops.aten.div.Tensor(rsqrt, 512);  rsqrt = None
        mul_27: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(div_2, sub_8);  div_2 = sub_8 = None
        mul_28: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.mul.Tensor(add_9, mul_1);  mul_1 = None
        sum_10: "f32[512][1]cpu" = torch.ops.aten.sum.dim_IntList(mul_28, [0, 1]);  mul_28 = None
        sum_11: "f32[512][1]cpu" = torch.ops.aten.sum.dim_IntList(add_9, [0, 1]);  add_9 = None
        view_19: "f32[256, 512][512, 1]cpu" = torch.ops.aten.reshape.default(mul_27, [256, 512]);  mul_27 = None
        permute_7: "f32[512, 512][1, 512]cpu" = torch.ops.aten.permute.default(primals_4, [1, 0]);  primals_4 = None
        permute_18: "f32[512, 512][512, 1]cpu" = torch.ops.aten.permute.default(permute_7, [1, 0]);  permute_7 = None
        mm_4: "f32[256, 512][512, 1]cpu" = torch.ops.aten.mm.default(view_19, permute_18);  permute_18 = None
        permute_19: "f32[512, 256][1, 512]cpu" = torch.ops.aten.permute.default(view_19, [1, 0])
        mm_5: "f32[512, 512][512, 1]cpu" = torch.ops.aten.mm.default(permute_19, view_6);  permute_19 = view_6 = None
        sum_12: "f32[1, 512][512, 1]cpu" = torch.ops.aten.sum.dim_IntList(view_19, [0], True);  view_19 = None
        view_20: "f32[512][1]cpu" = torch.ops.aten.reshape.default(sum_12, [512]);  sum_12 = None
        view_21: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.reshape.default(mm_4, [2, 1024, 64]);  mm_4 = None
        permute_22: "f32[1024, 2, 64][64, 65536, 1]cpu" = torch.ops.aten.permute.default(view_21, [1, 0, 2]);  view_21 = None
        permute_23: "f32[1024, 2, 2][4, 1, 2]cpu" = torch.ops.aten.permute.default(div, [0, 2, 1])
        bmm_2: "f32[1024, 2, 64][128, 64, 1]cpu" = torch.ops.aten.bmm.default(permute_23, permute_22);  permute_23 = None
        bmm_3: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.bmm.default(permute_22, permute_24);  permute_22 = permute_24 = None
        mul_29: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.mul.Tensor(bmm_3, div);  bmm_3 = None
        sum_13: "f32[1024, 2, 1][2, 1, 1]cpu" = torch.ops.aten.sum.dim_IntList(mul_29, [-1], True)
        neg: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.aten.neg.default(div);  div = None
        fma: "f32[1024, 2, 2][4, 2, 1]cpu" = torch.ops.prims.fma.default(neg, sum_13, mul_29);  neg = sum_13 = mul_29 = None
        bmm_4: "f32[1024, 64, 2][128, 2, 1]cpu" = torch.ops.aten.bmm.default(permute_25, fma);  permute_25 = None
        bmm_5: "f32[1024, 2, 64][128, 64, 1]cpu" = torch.ops.aten.bmm.default(fma, permute_26);  fma = permute_26 = None
        permute_27: "f32[1024, 2, 64][128, 1, 2]cpu" = torch.ops.aten.permute.default(bmm_4, [0, 2, 1]);  bmm_4 = None
        mul_30: "f32[1024, 2, 64][128, 64, 1]cpu" = torch.ops.aten.mul.Tensor(bmm_5, 0.125);  bmm_5 = None
        permute_28: "f32[2, 1024, 64][64, 128, 1]cpu" = torch.ops.aten.permute.default(bmm_2, [1, 0, 2]);  bmm_2 = None
        clone_2: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.clone.default(permute_28, memory_format = torch.contiguous_format);  permute_28 = None
        view_22: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(clone_2, [2, 128, 512]);  clone_2 = None
        permute_29: "f32[2, 1024, 64][1, 128, 2]cpu" = torch.ops.aten.permute.default(permute_27, [1, 0, 2]);  permute_27 = None
        view_23: "f32[2, 128, 512][1, 1024, 2]cpu" = torch.ops.aten.reshape.default(permute_29, [2, 128, 512]);  permute_29 = None
        permute_30: "f32[2, 1024, 64][64, 128, 1]cpu" = torch.ops.aten.permute.default(mul_30, [1, 0, 2]);  mul_30 = None
        clone_3: "f32[2, 1024, 64][65536, 64, 1]cpu" = torch.ops.aten.clone.default(permute_30, memory_format = torch.contiguous_format);  permute_30 = None
        view_24: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.ops.aten.reshape.default(clone_3, [2, 128, 512]);  clone_3 = None
        full_default: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.full.default([3, 2, 128, 512], 0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)

        # No stacktrace found for following nodes
        select_scatter_default: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.select_scatter.default(full_default, view_22, 0, 2);  view_22 = None
        select_scatter_default_1: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.select_scatter.default(full_default, view_23, 0, 1);  view_23 = None

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        add_10: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(select_scatter_default, select_scatter_default_1);  select_scatter_default = select_scatter_default_1 = None

        # No stacktrace found for following nodes
        select_scatter_default_2: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.select_scatter.default(full_default, view_24, 0, 0);  full_default = view_24 = None

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        add_11: "f32[3, 2, 128, 512][131072, 65536, 512, 1]cpu" = torch.ops.aten.add.Tensor(add_10, select_scatter_default_2);  add_10 = select_scatter_default_2 = None
        unsqueeze_1: "f32[3, 2, 128, 1, 512][131072, 65536, 512, 512, 1]cpu" = torch.ops.aten.unsqueeze.default(add_11, 3);  add_11 = None
        permute_31: "f32[1, 2, 128, 3, 512][512, 65536, 512, 131072, 1]cpu" = torch.ops.aten.permute.default(unsqueeze_1, [3, 1, 2, 0, 4]);  unsqueeze_1 = None
        squeeze_1: "f32[2, 128, 3, 512][65536, 512, 131072, 1]cpu" = torch.ops.aten.squeeze.dim(permute_31, 0);  permute_31 = None
        clone_4: "f32[2, 128, 3, 512][196608, 1536, 512, 1]cpu" = torch.ops.aten.clone.default(squeeze_1, memory_format = torch.contiguous_format);  squeeze_1 = None
        view_25: "f32[2, 128, 1536][196608, 1536, 1]cpu" = torch.ops.aten.reshape.default(clone_4, [2, 128, 1536]);  clone_4 = None
        view_26: "f32[256, 1536][1536, 1]cpu" = torch.ops.aten.reshape.default(view_25, [256, 1536]);  view_25 = None
        permute_32: "f32[1536, 256][1, 1536]cpu" = torch.ops.aten.permute.default(view_26, [1, 0])
        view: "f32[256, 512][512, 1]cpu" = torch.ops.aten.reshape.default(primals_1, [256, 512]);  primals_1 = None
        mm_6: "f32[1536, 512][512, 1]cpu" = torch.ops.aten.mm.default(permute_32, view);  permute_32 = view = None
        sum_14: "f32[1, 1536][1536, 1]cpu" = torch.ops.aten.sum.dim_IntList(view_26, [0], True);  view_26 = None
        view_27: "f32[1536][1]cpu" = torch.ops.aten.reshape.default(sum_14, [1536]);  sum_14 = None
        return (None, view_27, mm_6, mm_5, view_20, sum_10, sum_11, mm_3, view_17, mm_1, view_14, sum_4, sum_5)
