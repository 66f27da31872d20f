"""Real networks as models named by import path (config/real-models.yaml): ResNet-50
(torchvision), BERT-base and GPT-2 (transformers), ViT-B/16 (timm) and one Llama-style
decoder block (transformers). Each file is one factory, build(batch, dtype, device, **sizes)
-> (module, inputs), built from the library's configuration with random weights (no
download); the libraries are the optional dependencies `pip install .[models]`. A module
returns one tensor (logits or the last hidden state), whose mean is the train mode's loss.
"""
