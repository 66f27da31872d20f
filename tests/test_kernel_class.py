"""Kernel classes (core.kernel_class) at the boundaries a careless change crosses: a GEMM
with a fused epilogue is a matmul (and so counts tensor FLOPs in Nsight Compute's reader),
never elementwise; an Inductor pointwise kernel is a copy only when every op it fuses only
moves data; and the names the real networks ran (tests/data/real_models_h100,
benchmarks/results/h100-ncu and h200-default-sweep kernels.csv) each pinned to the class
read by hand from what the kernel does."""
import pytest

from fusionlab.core import kernel_class as K


@pytest.mark.parametrize("name", [
    # cuBLAS, CUTLASS and nvjet GEMMs with a bias or activation epilogue, as they name it
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_relu_f2f_stages_64x3_tn",
    "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_bias_relu_execute_kernel__5x_cublas",
    "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_tn_align8",
    "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_bias_relu_NNN",
    "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_gelu_NNT",
    "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel_gelu__5x_cublas",
    "triton_tem_fused_addmm_relu_0",          # Inductor's GEMM template with the relu fused in
    "triton_tem_fused_convolution_relu_3",
])
def test_a_gemm_with_an_epilogue_is_a_matmul(name):
    assert K.kernel_class(name) == K.MATMUL
    assert K.kernel_class(name) in K.MMA_CLASSES   # what ncu_report reads to count tensor FLOPs


@pytest.mark.parametrize("name, cls", [
    ("triton_poi_fused__to_copy_add_19", K.ELEMENTWISE),      # a cast and an add: arithmetic
    ("triton_poi_fused__to_copy_add_mul_pow_tanh_view_12", K.ELEMENTWISE),
    ("triton_poi_fused_add_copy__65", K.ELEMENTWISE),
    ("triton_poi_fused__to_copy_mm_t_17", K.ELEMENTWISE),
    ("triton_poi_fused_clone_view_add_4", K.ELEMENTWISE),
    ("triton_poi_fused_addmm_relu_0", K.ELEMENTWISE),         # the epilogue alone, after a cuBLAS GEMM
    ("triton_poi_fused__to_copy_10", K.COPIES),
    ("triton_poi_fused__to_copy_0", K.COPIES),
    ("triton_poi_fused_clone_view_3", K.COPIES),
    ("triton_poi_fused_cat_0", K.COPIES),
    ("triton_poi_fused__unsafe_view_clone_transpose_2", K.COPIES),
    ("triton_poi_fused_permute_5", K.COPIES),
    ("triton_poi_fused_constant_pad_nd_1", K.COPIES),
    ("triton_poi_fused__to_copy", K.COPIES),                   # no kernel number
])
def test_an_inductor_pointwise_kernel_is_a_copy_only_when_all_it_fuses_moves_data(name, cls):
    assert K.kernel_class(name) == cls


# (short name, full name, class): the real networks' kernels, each class by what it does
REAL = [
    ("batch_norm_transform_input_kernel", "void at::native::batch_norm_transform_input_kernel<c10::BFloat16, "
     "c10::BFloat16, float, (bool)1, int>(...)", K.REDUCTION),
    ("batch_norm_collect_statistics_kernel", "", K.REDUCTION),
    ("batch_norm_backward_kernel", "", K.REDUCTION),
    ("vectorized_layer_norm_kernel", "", K.REDUCTION),
    ("layer_norm_grad_input_kernel_vectorized", "", K.REDUCTION),
    ("GammaBetaBackwardCUDAKernelTemplate", "", K.REDUCTION),
    ("reduce_kernel", "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<c10::BFloat16, "
     "at::native::MeanOps<...>>>(T3)", K.REDUCTION),
    ("reduce_1Block_kernel", "", K.REDUCTION),
    ("splitKreduce_kernel", "void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float>(...)", K.REDUCTION),
    ("tensor_kernel_scan_innermost_dim", "", K.REDUCTION),
    ("triton_red_fused__native_batch_norm_legit_functional_13", "", K.REDUCTION),
    ("triton_per_fused_add_native_layer_norm_view_9", "", K.REDUCTION),
    ("vectorized_elementwise_kernel", "void at::native::vectorized_elementwise_kernel<(int)8, "
     "at::native::<unnamed>::launch_clamp_scalar(...)>(int, T2, T3)", K.ELEMENTWISE),
    ("unrolled_elementwise_kernel_for_multi_outputs", "", K.ELEMENTWISE),
    ("elementwise_kernel_with_index", "", K.ELEMENTWISE),
    ("multi_tensor_apply_kernel", "", K.ELEMENTWISE),
    ("fused_dropout_kernel_vec", "", K.ELEMENTWISE),
    ("distribution_elementwise_grid_stride_kernel", "", K.ELEMENTWISE),
    ("max_pool_forward_nchw", "", K.ELEMENTWISE),
    ("max_pool_backward_nchw", "", K.ELEMENTWISE),
    ("triton_poi_fused__native_batch_norm_legit_no_training_add_relu_7", "", K.ELEMENTWISE),
    ("triton_poi_fused_add_native_batch_norm_backward_threshold_backward_28", "", K.ELEMENTWISE),
    ("triton_poi_fused_convolution_0", "", K.ELEMENTWISE),
    ("nchwToNhwcKernel", "", K.COPIES),
    ("nhwcToNchwKernel", "", K.COPIES),
    ("nhwcAddPaddingKernel", "", K.COPIES),
    ("CatArrayBatchedCopy", "", K.COPIES),
    ("CatArrayBatchedCopy_vectorized", "", K.COPIES),
    ("vectorized_gather_kernel", "", K.COPIES),
    ("embedding_backward_feature_kernel", "", K.COPIES),
    ("Kernel2", "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_nn_align2>(T1::Params)",
     K.MATMUL),
    ("Kernel", "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>"
     "(T1::Params)", K.MATMUL),
    ("kernel", "std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, float, float, float, float>(T13)",
     K.MATMUL),
    ("gemv2T_kernel_val", "", K.MATMUL),                  # cuBLAS's matrix-vector product
    ("dot_kernel", "void dot_kernel<float, (int)128, (int)0, cublasDotParams<cublasGemvTensorStridedBatched<const "
     "float>, cublasGemvTensorStridedBatched<float>>>(T4)", K.MATMUL),   # cuBLAS running an mm of one column
    ("dot_kernel", "", K.OTHER),                          # the short name alone says nothing
    ("nvjet_sm90_tst_96x128_64x6_2x1_v_bz_bias_NNN", "", K.MATMUL),
    ("nvjet_sm90_tss_128x256_64x4_1x2_h_bz_coopA_TNN", "", K.MATMUL),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_"
     "execute_split_k_kernel__5x_cublas", "", K.MATMUL),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_warpgroupsize1x1x1_g1_"
     "execute_segment_k_off_kernel__5x_cudnn", "", K.MATMUL),
    ("sm90_xmma_dgrad_implicit_gemm_indexed_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize256x128x64_"
     "warpgroupsize2x1x1_g1_strided_execute_kernel__5x_cudnn", "", K.MATMUL),
    ("reduce_wgrad_nchw_helper", "void cudnn::cnn::reduce_wgrad_nchw_helper<float, __nv_bfloat16>(...)", K.MATMUL),
    ("init_device_workspace_kernel", "void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel<"
     "xmma__5x_cudnn::implicit_gemm::wgrad_indexed::Warp_specialized_params>(...)", K.MATMUL),
    ("triton_tem_fused_mm_0", "", K.MATMUL),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0", "",
     K.ATTENTION),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1x1_kernel0_0", "",
     K.ATTENTION),
    ("compute_dot_do_o_specialized", "", K.ATTENTION),
    ("convert_dq_to_16bits", "", K.ATTENTION),
    ("unpack_cudnn", "at::cuda::philox::unpack_cudnn(at::PhiloxCudaState, long *, long *)", K.OTHER),
    ("init_device_workspace_kernel", "", K.OTHER),
]


@pytest.mark.parametrize("name, full, cls", REAL, ids=[f"{n[:40]}-{bool(f)}" for n, f, _ in REAL])
def test_the_real_networks_kernel_names_keep_their_classes(name, full, cls):
    assert K.kernel_class(name, full) == cls


BUILT_IN = (K.ATTENTION, K.MATMUL, K.COPIES, K.REDUCTION, K.ELEMENTWISE, K.OTHER)


def test_every_class_is_one_of_classes_and_the_first_match_wins():
    # the built-in classes in their order (a class added by CONTRIBUTING's recipe may sit
    # among them), other last; of them only attention and matmul count tensor FLOPs
    assert tuple(c for c in K.CLASSES if c in BUILT_IN) == BUILT_IN and K.CLASSES[-1] == K.OTHER
    assert tuple(c for c in K.MMA_CLASSES if c in BUILT_IN) == (K.ATTENTION, K.MATMUL)
    # a name matching several patterns takes the earliest class: attention over matmul over
    # copies over reductions over elementwise
    assert K.kernel_class("flash_fwd_gemm_kernel") == K.ATTENTION
    assert K.kernel_class("gemm_copy_kernel") == K.MATMUL
    assert K.kernel_class("copy_norm_kernel") == K.COPIES
    assert K.kernel_class("softmax_elementwise_kernel") == K.REDUCTION
    assert K.kernel_class("convert_kernel") == K.OTHER       # conv(?!ert): a conversion is no convolution
    assert K.kernel_class("some_kernel", "void at::native::reduce_kernel<...>") == K.REDUCTION   # the full name
    assert K.kernel_class("elementwise_kernel", "void gemm<...>") == K.ELEMENTWISE   # the short name first


def test_the_records_are_what_the_classifier_figures_and_docs_read():
    """One record per class: CLASSES, MMA_CLASSES and COLOURS are the records' fields, the
    last record (other) has no rule, every Inductor kind has a class, and docs/outputs.md
    holds the table the records make."""
    import os

    from conftest import ROOT
    assert K.CLASSES == tuple(c.name for c in K.RECORDS)
    assert K.MMA_CLASSES == tuple(c.name for c in K.RECORDS if c.mma)
    assert list(K.COLOURS) == list(K.CLASSES) and len(set(K.COLOURS.values())) == len(K.CLASSES)
    assert (K.RECORDS[-1].name, K.RECORDS[-1].library, K.RECORDS[-1].inductor) == (K.OTHER, "", "")
    assert [K.kernel_class(f"triton_{kind}_fused_add_0") for kind in ("poi", "red", "per", "tem")] == \
        [K.ELEMENTWISE, K.REDUCTION, K.REDUCTION, K.MATMUL]
    with open(os.path.join(ROOT, "docs", "outputs.md")) as f:
        block = f.read().split("<!-- kernel-classes: python -m fusionlab.core.kernel_class -->\n")[1]
    assert block.split("\n<!-- /kernel-classes -->")[0] == K.docs_table(), \
        "docs/outputs.md's kernel-class table is stale: python -m fusionlab.core.kernel_class"
