{
  "variables": { "abacus_cflags": ["-O3", "-mavx2", "-mfma", "-msse4.2", "-std=c++17", "-pthread", "-fno-math-errno"] },
  "targets": [
    {
      "target_name": "gemm_avx512",
      "type": "static_library",
      "sources": ["native/cpu/gemm_avx512.cc"],
      "cflags!": ["-fno-exceptions", "-O2", "-O3"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=c++17"],
      "cflags_cc": ["<@(abacus_cflags)", "-mavx512f", "-fPIC"]
    },
    {
      "target_name": "mlp_bf16",
      "type": "static_library",
      "sources": ["native/cpu/mlp_bf16.cc"],
      "cflags!": ["-fno-exceptions", "-O2", "-O3"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=c++17"],
      "cflags_cc": ["<@(abacus_cflags)", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512bf16", "-mamx-tile", "-mamx-bf16", "-fPIC"]
    },
    {
      "target_name": "abacus_runtime",
      "dependencies": ["gemm_avx512", "mlp_bf16"],
      "sources": [
        "native/addon.cc",
        "native/common/crc32c.cc",
        "native/common/shard.cc",
        "native/cpu/gemm.cc",
        "native/cpu/gemm_avx2.cc",
        "native/cpu/embedding_bag.cc",
        "native/cpu/optimizers.cc",
        "native/cpu/metrics.cc",
        "native/cpu/mlp_bf16_pack.cc",
        "native/cpu/model.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions", "-O2", "-O3"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=c++17"],
      "cflags_cc": ["<@(abacus_cflags)", "-fexceptions"],
      "ldflags": ["-pthread"]
    }
  ]
}
