"""Example consumer stack: read the serving stack's outputs through a StackReference and hand an app
the gateway settings (a ConfigMap its pods mount as env). The key stays in the serving stack's Secret;
the outputs only name it (copy it into the app's namespace with your secret store, never through state)."""

import pulumi
import pulumi_kubernetes as k8s
from gateway_client import ClientSettings

config = pulumi.Config()
serving = pulumi.StackReference(config.require("servingStack"))
outputs = pulumi.Output.all(
    contractVersion=serving.get_output("contractVersion"), gateway=serving.get_output("gateway")
)
settings = outputs.apply(lambda values: ClientSettings.from_outputs(values, config.get("model") or None))

k8s.core.v1.ConfigMap(
    "gateway-client-settings",
    metadata={"name": "gateway-client", "namespace": config.require("namespace")},
    data={
        "OPENAI_BASE_URL": settings.apply(lambda s: s.base_url),
        "GATEWAY_MODEL": settings.apply(lambda s: s.model),
        "GATEWAY_FALLBACKS": settings.apply(lambda s: ",".join(s.fallbacks)),
    },
)
pulumi.export("gatewayUrl", settings.apply(lambda s: s.base_url))
pulumi.export("model", settings.apply(lambda s: s.model))
pulumi.export("apiKeySecret", settings.apply(lambda s: f"{s.secret_namespace}/{s.secret_name}#{s.secret_key}"))
