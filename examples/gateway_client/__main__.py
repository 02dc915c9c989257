"""Example consumer stack: read the serving stack's outputs (contract 2.x) through a StackReference and give
an app's namespace on the serving cluster what its pods need to call the gateway: a ConfigMap with the URL
and model, and a Secret with the key, copied from the serving stack's secret output `gatewayApiKey` (it stays
a Pulumi secret all the way). The Kubernetes provider is built from the serving stack's `kubeconfig` output,
never from the ambient kube context. A serving stack that cannot serve the app (no gateway, as dev; a cluster
it does not create, so no kubeconfig) stops the program with one line saying why, before any resource."""

import pulumi
import pulumi_kubernetes as k8s
from gateway_client import ClientSettings, StackOutputsError

config = pulumi.Config()
serving_stack = config.require("servingStack")
namespace = config.require("namespace")
serving = pulumi.StackReference(serving_stack)

CONFIG_MAP, KEY_SECRET, KEY_FIELD = "gateway-client", "gateway-client-key", "OPENAI_API_KEY"
# The outputs besides the contract's gateway that this app needs, and what their absence means.
REQUIRED = {
    "kubeconfig": "the stack exports no kubeconfig (it runs on a cluster it does not create): deploy the app "
    "with that cluster's own tooling",
    "gatewayApiKey": "the stack exports no gatewayApiKey (contract 2.0 adds it): `pulumi up` the serving stack",
}


async def output_value(name: str) -> object:
    """A plain output's value; of a secret one only whether it is set (its value stays inside the Output)."""
    details = await serving.get_output_details(name)
    if details.value is not None:
        return details.value
    return True if details.secret_value is not None else None


async def main() -> None:
    outputs = {name: await output_value(name) for name in ("contractVersion", "gateway", *REQUIRED)}
    try:
        settings = ClientSettings.from_outputs(outputs, config.get("model") or None)
        missing = [why for name, why in REQUIRED.items() if not outputs[name]]
        if missing:
            raise StackOutputsError(missing[0])
    except StackOutputsError as error:
        raise pulumi.RunError(f"servingStack {serving_stack}: {error}") from None

    cluster = pulumi.ResourceOptions(
        provider=k8s.Provider("serving-cluster", kubeconfig=serving.require_output("kubeconfig"))
    )
    app_namespace = k8s.core.v1.Namespace("app-namespace", metadata={"name": namespace}, opts=cluster)
    in_namespace = {"namespace": app_namespace.metadata.name}
    k8s.core.v1.ConfigMap(
        "gateway-client-settings",
        metadata={"name": CONFIG_MAP, **in_namespace},
        data={
            "OPENAI_BASE_URL": settings.base_url,
            "GATEWAY_MODEL": settings.model,
            "GATEWAY_FALLBACKS": ",".join(settings.fallbacks),
        },
        opts=cluster,
    )
    k8s.core.v1.Secret(
        "gateway-client-key",
        metadata={"name": KEY_SECRET, **in_namespace},
        string_data={KEY_FIELD: serving.require_output("gatewayApiKey")},
        opts=cluster,
    )
    pulumi.export("gatewayUrl", settings.base_url)
    pulumi.export("model", settings.model)
    pulumi.export("envFrom", {"configMap": CONFIG_MAP, "secret": KEY_SECRET, "namespace": namespace})


pulumi.run(main)
