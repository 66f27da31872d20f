class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 128, 512][65536, 512, 1]cpu", L_self_modules_attn_parameters_in_proj_bias_: "f32[1536][1]cpu", L_self_modules_attn_parameters_in_proj_weight_: "f32[1536, 512][512, 1]cpu", L_self_modules_attn_modules_out_proj_parameters_weight_: "f32[512, 512][512, 1]cpu", L_self_modules_attn_modules_out_proj_parameters_bias_: "f32[512][1]cpu", L_self_modules_norm1_parameters_weight_: "f32[512][1]cpu", L_self_modules_norm1_parameters_bias_: "f32[512][1]cpu", L_self_modules_ff_modules_0_parameters_weight_: "f32[2048, 512][512, 1]cpu", L_self_modules_ff_modules_0_parameters_bias_: "f32[2048][1]cpu", L_self_modules_ff_modules_2_parameters_weight_: "f32[512, 2048][2048, 1]cpu", L_self_modules_ff_modules_2_parameters_bias_: "f32[512][1]cpu", L_self_modules_norm2_parameters_weight_: "f32[512][1]cpu", L_self_modules_norm2_parameters_bias_: "f32[512][1]cpu"):
        l_x_ = L_x_
        l_self_modules_attn_parameters_in_proj_bias_ = L_self_modules_attn_parameters_in_proj_bias_
        l_self_modules_attn_parameters_in_proj_weight_ = L_self_modules_attn_parameters_in_proj_weight_
        l_self_modules_attn_modules_out_proj_parameters_weight_ = L_self_modules_attn_modules_out_proj_parameters_weight_
        l_self_modules_attn_modules_out_proj_parameters_bias_ = L_self_modules_attn_modules_out_proj_parameters_bias_
        l_self_modules_norm1_parameters_weight_ = L_self_modules_norm1_parameters_weight_
        l_self_modules_norm1_parameters_bias_ = L_self_modules_norm1_parameters_bias_
        l_self_modules_ff_modules_0_parameters_weight_ = L_self_modules_ff_modules_0_parameters_weight_
        l_self_modules_ff_modules_0_parameters_bias_ = L_self_modules_ff_modules_0_parameters_bias_
        l_self_modules_ff_modules_2_parameters_weight_ = L_self_modules_ff_modules_2_parameters_weight_
        l_self_modules_ff_modules_2_parameters_bias_ = L_self_modules_ff_modules_2_parameters_bias_
        l_self_modules_norm2_parameters_weight_ = L_self_modules_norm2_parameters_weight_
        l_self_modules_norm2_parameters_bias_ = L_self_modules_norm2_parameters_bias_

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:24 in forward, code: x = self.norm1(x + self.attn(x, x, x)[0])
        multi_head_attention_forward = torch.nn.functional.multi_head_attention_forward(l_x_, l_x_, l_x_, 512, 8, l_self_modules_attn_parameters_in_proj_weight_, l_self_modules_attn_parameters_in_proj_bias_, None, None, False, 0.0, l_self_modules_attn_modules_out_proj_parameters_weight_, l_self_modules_attn_modules_out_proj_parameters_bias_, training = True, key_padding_mask = None, need_weights = True, attn_mask = None, average_attn_weights = True, is_causal = False);  l_self_modules_attn_parameters_in_proj_weight_ = l_self_modules_attn_parameters_in_proj_bias_ = l_self_modules_attn_modules_out_proj_parameters_weight_ = l_self_modules_attn_modules_out_proj_parameters_bias_ = None
        attn_output: "f32[2, 128, 512][65536, 512, 1]cpu" = multi_head_attention_forward[0];  multi_head_attention_forward = None
        add: "f32[2, 128, 512][65536, 512, 1]cpu" = l_x_ + attn_output;  l_x_ = attn_output = None
        x: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.nn.functional.layer_norm(add, (512,), l_self_modules_norm1_parameters_weight_, l_self_modules_norm1_parameters_bias_, 1e-05);  add = l_self_modules_norm1_parameters_weight_ = l_self_modules_norm1_parameters_bias_ = None

        # File: /work/wt/i70/fusionlab/experiments/models/transformer_block.py:25 in forward, code: x = self.norm2(x + self.ff(x))
        input_1: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch._C._nn.linear(x, l_self_modules_ff_modules_0_parameters_weight_, l_self_modules_ff_modules_0_parameters_bias_);  l_self_modules_ff_modules_0_parameters_weight_ = l_self_modules_ff_modules_0_parameters_bias_ = None
        input_2: "f32[2, 128, 2048][262144, 2048, 1]cpu" = torch._C._nn.gelu(input_1, approximate = 'none');  input_1 = None
        input_3: "f32[2, 128, 512][65536, 512, 1]cpu" = torch._C._nn.linear(input_2, l_self_modules_ff_modules_2_parameters_weight_, l_self_modules_ff_modules_2_parameters_bias_);  input_2 = l_self_modules_ff_modules_2_parameters_weight_ = l_self_modules_ff_modules_2_parameters_bias_ = None
        add_1: "f32[2, 128, 512][65536, 512, 1]cpu" = x + input_3;  x = input_3 = None
        x_1: "f32[2, 128, 512][65536, 512, 1]cpu" = torch.nn.functional.layer_norm(add_1, (512,), l_self_modules_norm2_parameters_weight_, l_self_modules_norm2_parameters_bias_, 1e-05);  add_1 = l_self_modules_norm2_parameters_weight_ = l_self_modules_norm2_parameters_bias_ = None
        return (x_1,)


 # graph id: 140523661804560